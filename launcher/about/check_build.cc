#include "about/check_build.h"

#include "ops/shm/shm_probe_cache.h"
#include "options/usage_error.h"
#include "plan/mpi_implementation.h"
#include "process/process_util.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef CHORUS_WITH_NCCL
#include <nccl.h>
#endif
#ifdef CHORUS_WITH_CUDNN
#include <cudnn_version.h>
#endif

#ifndef CHORUS_VERSION
#define CHORUS_VERSION "unknown"
#endif

namespace chorus::launcher {
namespace {

std::string box(bool on) { return on ? "    [X] " : "    [ ] "; }

#ifdef CHORUS_WITH_CUDA
// CUDA's versions are major * 1000 + minor * 10.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// The toolkit this build compiled against, and what this machine has now:
// the driver's CUDA version and the GPUs it shows this process.
std::string describe_cuda() {
  std::string out = cuda_version_text(CUDART_VERSION);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) return out + "; no CUDA driver on this machine";
  out += "; driver supports CUDA " + cuda_version_text(driver);
  int gpus = 0;
  const cudaError_t error = cudaGetDeviceCount(&gpus);
  if (error != cudaSuccess) return out + "; no GPU visible (" + cudaGetErrorString(error) + ")";
  return out + "; " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " visible";
}
#endif

}  // namespace

BuildFeatures detect_build_features() {
  BuildFeatures features;
  features.version = CHORUS_VERSION;
#ifdef CHORUS_WITH_CUDA
  features.cuda = describe_cuda();
#endif
#ifdef CHORUS_WITH_NCCL
  features.nccl = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
#endif
#ifdef CHORUS_WITH_CUDNN
  features.cudnn =
      std::to_string(CUDNN_MAJOR) + "." + std::to_string(CUDNN_MINOR) + "." + std::to_string(CUDNN_PATCHLEVEL);
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
  features.probe_folder = shm_probe_cache_folder();
  features.probes = describe_shm_probe_cache();
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
  out += box(!f.nccl.empty()) + "NCCL (CUDA)" + (f.nccl.empty() ? "" : " " + f.nccl) + "\n";
  out += box(!f.cuda.empty()) + "CUDA through host memory (ranks sharing a GPU, or no NCCL)\n";
  out += box(f.mpi) + "MPI\n";
  out += box(f.shared_memory) + "Shared memory (allreduce among the ranks of one host)\n";
  out += box(false) + "Gloo\n\n";
  out += "GPU support:\n";
  out += box(!f.cuda.empty()) + "CUDA" + (f.cuda.empty() ? " (built with CHORUS_WITH_CUDA=OFF)" : " " + f.cuda) + "\n";
  out += box(!f.cudnn.empty()) + "cuDNN" + (f.cudnn.empty() ? "" : " " + f.cudnn) + " (the train_mnist_cuda example)\n\n";
  out += "Available launchers:\n";
  out += box(!f.mpirun.empty()) + "mpirun" + (f.mpirun.empty() ? " (no Open MPI mpirun on PATH)" : " (" + f.mpirun + ")") + "\n";
  out += box(f.srun_works) + "srun (Slurm" + (f.srun.empty() ? ": not on PATH" : ": " + f.srun) + ")\n";
  out += "\nShared-memory allreduce, measured at start-up (CHORUS_SHM_PROBE; cache " +
         (f.probe_folder.empty() ? std::string("unavailable: neither XDG_CACHE_HOME nor HOME is set") : f.probe_folder) +
         "):\n";
  if (f.probes.empty()) out += "    nothing measured yet on this machine\n";
  for (const std::string& line : f.probes) out += "    " + line + "\n";
  return out;
}

}  // namespace chorus::launcher
