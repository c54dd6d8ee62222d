// FusionBuffer: the persistent staging buffer for fused collectives. It
// grows to the largest size a cycle needed and is reused afterwards: on
// these machines the first touch of fresh memory costs ~15 us per page, so
// allocating per step would dominate small collectives.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace chorus {

class FusionBuffer {
 public:
  // At least `bytes` of 64-byte aligned memory; contents are unspecified.
  void* get(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t capacity_ = 0;
};

}  // namespace chorus
