#include "check_build.h"

#include "mpi_implementation.h"
#include "process_util.h"
#include "usage_error.h"

#ifndef CHORUS_VERSION
#define CHORUS_VERSION "unknown"
#endif

namespace chorus::launcher {
namespace {

std::string box(bool on) { return on ? "    [X] " : "    [ ] "; }

}  // namespace

BuildFeatures detect_build_features() {
  BuildFeatures features;
  features.version = CHORUS_VERSION;
#ifdef CHORUS_WITH_NCCL
  features.cuda_toolkit = true;
#endif
#ifdef CHORUS_WITH_TORCH
  features.torch = true;
#endif
  try {
    const MpiImplementation mpi = detect_mpi();
    features.mpirun = mpi.name + " " + mpi.version;
  } catch (const UsageError&) {
    features.mpirun.clear();
  }
  CapturedOutput output;
  std::string error;
  if (capture_output({"srun", "--version"}, &output, &error)) {
    features.srun_works = output.status == 0;
    const std::string first = output.output.substr(0, output.output.find('\n'));
    features.srun = features.srun_works ? first : "on PATH, but 'srun --version' failed: " + first;
  }
  return features;
}

std::string format_check_build(const BuildFeatures& f) {
  std::string out = "Chorus v" + f.version + ":\n\n";
  out += "Available frameworks:\n";
  out += box(f.torch) + "LibTorch (C++)\n\n";
  out += "Available controllers:\n";
  out += box(f.mpi) + "MPI\n";
  out += box(false) + "Gloo\n\n";
  out += "Available tensor operations:\n";
  out += box(false) + "NCCL (CUDA)" +
         (f.cuda_toolkit ? ": not implemented yet (CUDA Toolkit and NCCL were found)" : "") + "\n";
  out += box(f.mpi) + "MPI\n";
  out += box(f.shared_memory) + "Shared memory (allreduce among the ranks of one host)\n";
  out += box(false) + "Gloo\n\n";
  out += "Available launchers:\n";
  out += box(!f.mpirun.empty()) + "mpirun" + (f.mpirun.empty() ? " (no Open MPI mpirun on PATH)" : " (" + f.mpirun + ")") + "\n";
  out += box(f.srun_works) + "srun (Slurm" + (f.srun.empty() ? ": not on PATH" : ": " + f.srun) + ")\n";
  return out;
}

}  // namespace chorus::launcher
