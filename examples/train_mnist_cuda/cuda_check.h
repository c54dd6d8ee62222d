// Error checks for the CUDA runtime, cuBLAS and cuDNN. Every call into them
// goes through one of these macros; a failure throws chorus::Error
// (kInternal) naming the call as written, where it was made and the library's
// own description, e.g.
//   "cublasSgemm(...) failed at mlp_model.cc:120: CUBLAS_STATUS_INVALID_VALUE
//    (an unsupported value or parameter was passed to the function)".
// Kernel launches are checked with CUDA_CHECK_LAUNCH() right after them.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "chorus/status.h"

namespace train_mnist_cuda {

// The messages, separately so that tests can check them without a GPU.
std::string cuda_error_message(const char* call, const char* file, int line, cudaError_t error);
std::string cublas_error_message(const char* call, const char* file, int line, cublasStatus_t status);
std::string cudnn_error_message(const char* call, const char* file, int line, cudnnStatus_t status);

[[noreturn]] void throw_internal(const std::string& message);

// Throws when the last kernel launch on this thread failed.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace train_mnist_cuda

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    const cudaError_t cuda_check_error_ = (call);                                              \
    if (cuda_check_error_ != cudaSuccess) {                                                    \
      ::train_mnist_cuda::throw_internal(                                                      \
          ::train_mnist_cuda::cuda_error_message(#call, __FILE__, __LINE__, cuda_check_error_)); \
    }                                                                                          \
  } while (0)

// After a kernel launch: a bad configuration shows up in cudaGetLastError.
#define CUDA_CHECK_LAUNCH(kernel_name) ::train_mnist_cuda::check_launch(kernel_name, __FILE__, __LINE__)

#define CUBLAS_CHECK(call)                                                                      \
  do {                                                                                          \
    const cublasStatus_t cublas_check_status_ = (call);                                         \
    if (cublas_check_status_ != CUBLAS_STATUS_SUCCESS) {                                        \
      ::train_mnist_cuda::throw_internal(::train_mnist_cuda::cublas_error_message(              \
          #call, __FILE__, __LINE__, cublas_check_status_));                                    \
    }                                                                                           \
  } while (0)

#define CUDNN_CHECK(call)                                                                       \
  do {                                                                                          \
    const cudnnStatus_t cudnn_check_status_ = (call);                                           \
    if (cudnn_check_status_ != CUDNN_STATUS_SUCCESS) {                                          \
      ::train_mnist_cuda::throw_internal(::train_mnist_cuda::cudnn_error_message(               \
          #call, __FILE__, __LINE__, cudnn_check_status_));                                     \
    }                                                                                           \
  } while (0)
