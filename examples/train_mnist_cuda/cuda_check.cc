#include "cuda_check.h"

#include <cstring>

namespace train_mnist_cuda {
namespace {

std::string where(const char* call, const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(call) + " failed at " + (slash ? slash + 1 : file) + ":" + std::to_string(line) + ": ";
}

}  // namespace

std::string cuda_error_message(const char* call, const char* file, int line, cudaError_t error) {
  return where(call, file, line) + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
}

std::string cublas_error_message(const char* call, const char* file, int line, cublasStatus_t status) {
  return where(call, file, line) + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")";
}

std::string cudnn_error_message(const char* call, const char* file, int line, cudnnStatus_t status) {
  return where(call, file, line) + cudnnGetErrorString(status) + " (cudnnStatus_t " +
         std::to_string(static_cast<int>(status)) + ")";
}

void throw_internal(const std::string& message) {
  throw chorus::Error(chorus::Status::Internal(message));
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw_internal(cuda_error_message((std::string("launching kernel ") + kernel).c_str(), file, line, error));
  }
}

}  // namespace train_mnist_cuda
