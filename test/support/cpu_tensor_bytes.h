// The bytes held by CPU tensors in this process, exactly: c10's CPU
// allocator is replaced by one that counts what every tensor's storage asks
// for while it is alive, and the highest such total (the peak). LibTorch has
// no CPU counterpart of CUDA's allocator statistics, and the process's RSS
// mixes tensors with the heap's free lists, MPI's buffers and code. Lets the
// pipeline's memory tests and chorus_pipeline_memory_bench see what a stage
// holds. Header-only, shared by tests and benchmarks.
//
// install() must run before the threads that allocate tensors start; storage
// allocated before it keeps its own deleter and is never counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include <c10/core/CPUAllocator.h>

namespace chorus_test {

class CpuTensorBytes final : public c10::Allocator {
 public:
  // Makes the counter c10's CPU allocator (once per process) and returns it.
  static CpuTensorBytes& install() {
    // c10 keeps the allocator for the rest of the process: never destroyed.
    static CpuTensorBytes* counter = [] {
      auto* made = new CpuTensorBytes(c10::GetCPUAllocator());
      c10::SetCPUAllocator(made, /*priority=*/1);
      if (c10::GetCPUAllocator() != made) {
        throw std::runtime_error("CpuTensorBytes: c10 kept another CPU allocator of higher priority");
      }
      return made;
    }();
    return *counter;
  }

  // Bytes of CPU tensor storage alive now, and the most alive at once since
  // the last reset_peak().
  int64_t live() const { return live_.load(); }
  int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(live_.load()); }

  c10::DataPtr allocate(size_t n) const override {
    // The pointer is its own context (as in c10's default allocator), so
    // raw_allocate works through this allocator too; a table gives the size
    // back at release.
    void* data = base_->raw_allocate(n);
    if (data != nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[data] = n;
    }
    const int64_t now = live_.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
    for (int64_t seen = peak_.load(); now > seen && !peak_.compare_exchange_weak(seen, now);) {
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  explicit CpuTensorBytes(c10::Allocator* base) : base_(base), base_delete_(base->raw_deleter()) {
    if (base_delete_ == nullptr) {
      throw std::runtime_error(
          "CpuTensorBytes: c10's CPU allocator has no raw deleter, so it cannot be wrapped");
    }
  }

  static void release(void* data) {
    if (data == nullptr) return;
    CpuTensorBytes& self = install();
    size_t n = 0;
    {
      std::lock_guard<std::mutex> lock(self.mutex_);
      auto found = self.sizes_.find(data);
      if (found != self.sizes_.end()) {
        n = found->second;
        self.sizes_.erase(found);
      }
    }
    self.live_.fetch_sub(static_cast<int64_t>(n));
    self.base_delete_(data);
  }

  c10::Allocator* base_;
  c10::DeleterFnPtr base_delete_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, size_t> sizes_;
  mutable std::atomic<int64_t> live_{0};
  mutable std::atomic<int64_t> peak_{0};
};

}  // namespace chorus_test
