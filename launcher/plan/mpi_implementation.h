// Which MPI `mpirun` belongs to, from what `mpirun --version` prints.
// chorusrun builds commands for Open MPI; anything else is refused with a
// message saying what was found.
#pragma once

#include <string>

namespace chorus::launcher {

struct MpiImplementation {
  std::string name;     // "Open MPI"
  std::string version;  // "4.1.4"
};

// Throws UsageError when the text is not Open MPI's, naming what it is.
MpiImplementation identify_mpi(const std::string& version_output);

// Runs `mpirun --version` and identifies it; throws when mpirun cannot run.
MpiImplementation detect_mpi(const std::string& mpirun = "mpirun");

}  // namespace chorus::launcher
