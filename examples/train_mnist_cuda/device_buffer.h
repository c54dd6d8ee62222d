// DeviceBuffer<T>: `count` elements of GPU memory (cudaMalloc), freed with
// the object. Contents start undefined.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cuda_check.h"

namespace train_mnist_cuda {

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(int64_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() {
    if (data_) (void)cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
    other.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) (void)cudaFree(data_);
      data_ = other.data_;
      count_ = other.count_;
      other.data_ = nullptr;
      other.count_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }
  int64_t count() const { return count_; }
  size_t bytes() const { return static_cast<size_t>(count_) * sizeof(T); }

 private:
  T* data_ = nullptr;
  int64_t count_ = 0;
};

}  // namespace train_mnist_cuda
