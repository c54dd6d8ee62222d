// CudaStream: a stream of this program's own, created non-blocking so that
// work on the legacy default stream (of a library, say) never serialises
// with it; destroyed with the object.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda_check.h"

namespace train_mnist_cuda {

class CudaStream {
 public:
  CudaStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() { (void)cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace train_mnist_cuda
