// chorusrun --check-build: what this build of Chorus supports, as a
// checklist (compile-time features from CMake, launchers found at run time).
#pragma once

#include <string>
#include <vector>

namespace chorus::launcher {

struct BuildFeatures {
  std::string version;
  bool mpi = true;
  // The GPU half: empty strings where this build has no such part.
  std::string cuda;         // "13.0" (the toolkit built against), with the
                            // driver's and the GPUs visible now
  std::string nccl;         // "2.28.3": the NCCL backend is built
  std::string cudnn;        // "9.19.0": the cuBLAS/cuDNN example is built
  bool shared_memory = true;  // ops/shm: intra-host allreduce
  bool torch = false;
  std::string mpirun;  // "Open MPI 4.1.4", or "" when not found / not supported
  std::string srun;  // "slurm 22.05.8", or why srun is not usable ("" when absent)
  bool srun_works = false;
  // The shared-memory probe's cache on this machine (ops/shm/shm_probe.h):
  // one line per measured setting, "<key>: <choice>".
  std::string probe_folder;
  std::vector<std::string> probes;
};

// The features compiled into this binary, and the launchers on PATH.
BuildFeatures detect_build_features();
std::string format_check_build(const BuildFeatures& features);

}  // namespace chorus::launcher
