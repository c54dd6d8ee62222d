// Which GPU a rank uses, and the message when it has none.
//
// A rank uses GPU local_rank % number of visible GPUs: one GPU per rank when
// a node runs as many ranks as it has GPUs (chorusrun -np 8 on an 8-GPU
// node), GPUs shared round-robin when it runs more. CHORUS_CUDA_DEVICE, when
// set, names the GPU instead (an index among the visible ones), as it does
// for the runtime's GPU backends, so that both use the same GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace train_mnist_cuda {

// What cudaGetDeviceCount said.
struct DeviceProbe {
  int count = 0;
  cudaError_t error = cudaSuccess;  // cudaErrorNoDevice, cudaErrorInsufficientDriver, ...
};

// Asks the CUDA runtime; never throws (no driver or no GPU is a result).
DeviceProbe probe_devices();

// Sets *device to chorus_cuda_device (CHORUS_CUDA_DEVICE's value; null when
// unset) or else local_rank % device_count, and returns ""; or returns why
// not ("train_mnist_cuda: rank 1: CHORUS_CUDA_DEVICE=4 is invalid: expected
// a GPU index from 0 to 1 ..."). device_count must be positive.
std::string choose_device(int rank, int local_rank, int device_count, const char* chorus_cuda_device,
                          int* device);

// Makes `device` this thread's current device, whose waits sleep instead of
// spinning (cudaDeviceScheduleBlockingSync: ranks often share few cores).
// Throws chorus::Error when CUDA refuses.
void use_device(int device);

// "train_mnist_cuda: no CUDA device is visible to rank 3 (cudaGetDeviceCount:
// cudaErrorNoDevice: no CUDA-capable device is detected; CUDA_VISIBLE_DEVICES
// is '')". `cuda_visible_devices` is the variable's value, or null when unset.
std::string no_device_message(int rank, const DeviceProbe& probe, const char* cuda_visible_devices);

}  // namespace train_mnist_cuda
