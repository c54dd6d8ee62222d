#include "plan/mpi_implementation.h"

#include "options/usage_error.h"
#include "process/process_util.h"

namespace chorus::launcher {

MpiImplementation identify_mpi(const std::string& output) {
  // "mpirun (Open MPI) 4.1.4"
  const std::string marker = "(Open MPI) ";
  const size_t at = output.find(marker);
  if (at != std::string::npos) {
    const size_t start = at + marker.size();
    const size_t end = output.find_first_of(" \t\r\n", start);
    const std::string version = output.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!version.empty()) return MpiImplementation{"Open MPI", version};
  }
  std::string what = "an unknown MPI";
  if (output.find("HYDRA") != std::string::npos || output.find("MPICH") != std::string::npos) what = "MPICH (Hydra)";
  if (output.find("Intel(R) MPI") != std::string::npos) what = "Intel MPI";
  const std::string first_line = output.substr(0, output.find('\n'));
  throw UsageError("mpirun is " + what + " ('mpirun --version' printed '" + first_line +
                   "'): chorusrun supports Open MPI's mpirun; put Open MPI's mpirun first on PATH, "
                   "or use --launcher srun inside a Slurm allocation");
}

MpiImplementation detect_mpi(const std::string& mpirun) {
  CapturedOutput result;
  std::string error;
  if (!capture_output({mpirun, "--version"}, &result, &error)) {
    throw UsageError("cannot run '" + mpirun + " --version' (" + error +
                     "): chorusrun needs Open MPI's mpirun on PATH (Debian: apt-get install openmpi-bin)");
  }
  return identify_mpi(result.output);
}

}  // namespace chorus::launcher
