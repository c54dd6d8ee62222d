#include "device_selection.h"

#include "cuda_check.h"

namespace train_mnist_cuda {

DeviceProbe probe_devices() {
  DeviceProbe probe;
  probe.error = cudaGetDeviceCount(&probe.count);
  if (probe.error != cudaSuccess) {
    probe.count = 0;
    // The failed call leaves its error as this thread's last error; clear it
    // so that a later, unrelated check does not report it (without a driver
    // every call reports it again anyway).
    (void)cudaGetLastError();
  }
  return probe;
}

void use_device(int device) {
  CUDA_CHECK(cudaSetDevice(device));
  // Older runtimes refuse new flags once the device is initialised; the
  // waits that matter sleep anyway (StreamEvent), so that is not an error.
  const cudaError_t flags = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
  if (flags == cudaErrorSetOnActiveProcess) {
    (void)cudaGetLastError();
  } else {
    CUDA_CHECK(flags);
  }
}

std::string choose_device(int rank, int local_rank, int device_count, const char* chorus_cuda_device,
                          int* device) {
  if (chorus_cuda_device == nullptr) {
    *device = local_rank % device_count;
    return "";
  }
  const std::string value = chorus_cuda_device;
  const bool digits = !value.empty() && value.size() <= 9 && value.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(value) >= device_count) {
    return "train_mnist_cuda: rank " + std::to_string(rank) + ": CHORUS_CUDA_DEVICE=" + value +
           " is invalid: expected a GPU index from 0 to " + std::to_string(device_count - 1) + " (" +
           std::to_string(device_count) + " visible to this rank)";
  }
  *device = std::stoi(value);
  return "";
}

std::string no_device_message(int rank, const DeviceProbe& probe, const char* cuda_visible_devices) {
  std::string detail;
  if (probe.error != cudaSuccess) {
    detail = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(probe.error) + ": " +
             cudaGetErrorString(probe.error);
  } else {
    detail = "cudaGetDeviceCount found " + std::to_string(probe.count) + " devices";
  }
  detail += cuda_visible_devices ? std::string("; CUDA_VISIBLE_DEVICES is '") + cuda_visible_devices + "'"
                                 : std::string("; CUDA_VISIBLE_DEVICES is not set");
  return "train_mnist_cuda: no CUDA device is visible to rank " + std::to_string(rank) + " (" + detail + ")";
}

}  // namespace train_mnist_cuda
