// Prints how many CUDA devices this process sees (0 when CUDA reports none
// or fails, with CUDA's reason on stderr): the GPU tests' scripts skip on 0.
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    std::fprintf(stderr, "cudaGetDeviceCount: %s: %s\n", cudaGetErrorName(error), cudaGetErrorString(error));
    count = 0;
  }
  std::printf("%d\n", count);
  return 0;
}
