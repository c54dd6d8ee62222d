#include "ops/gpu/cuda_binding.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ops/cuda/cuda_device.h"

namespace chorus {
namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// For messages: which GPUs the launcher let this process see.
std::string visible_devices() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return value == nullptr ? "CUDA_VISIBLE_DEVICES unset" : "CUDA_VISIBLE_DEVICES=" + std::string(value);
}

}  // namespace

std::string gpu_uuid_text(const unsigned char bytes[16]) {
  char text[48];
  std::snprintf(text, sizeof(text),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0], bytes[1],
                bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11],
                bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

RankGpu probe_rank_gpu(const Config& config, const Topology& topology, GpuBinding* binding) {
  RankGpu gpu;
  gpu.host = host_name();
  int visible = 0;
  const cudaError_t counted = cudaGetDeviceCount(&visible);
  if (counted != cudaSuccess) {
    // No driver, or no device: not sticky, but cleared so that nothing later
    // reports it as its own.
    (void)cudaGetLastError();
    gpu.why = visible_devices() + "; " +
              cuda_status("cudaGetDeviceCount", counted).message();
    return gpu;
  }
  if (visible == 0) {
    gpu.why = visible_devices() + "; cudaGetDeviceCount found none";
    return gpu;
  }
  Status status = bind_cuda_device(topology.local_rank, visible, config.cuda_device, visible_devices(), binding);
  cudaDeviceProp properties{};
  if (status.ok()) {
    status = cuda_status(("cudaGetDeviceProperties of GPU " + std::to_string(binding->index)).c_str(),
                         cudaGetDeviceProperties(&properties, binding->index));
  }
  if (!status.ok()) {
    gpu.state = RankGpu::State::kFailed;
    gpu.why = status.message();
    gpu.failure = status;
    return gpu;
  }
  gpu.state = RankGpu::State::kBound;
  gpu.index = binding->index;
  gpu.uuid = gpu_uuid_text(reinterpret_cast<const unsigned char*>(properties.uuid.bytes));
  return gpu;
}

}  // namespace chorus
