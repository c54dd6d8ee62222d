#include "fusion_buffer.h"

#include <cstring>
#include <new>

namespace chorus {

void* FusionBuffer::get(size_t bytes) {
  if (bytes <= capacity_ && data_) return data_.get();
  constexpr size_t kAlign = 64;
  // Grow geometrically so a slowly growing fused size does not reallocate
  // (and re-touch) every cycle.
  size_t capacity = capacity_ * 2 > bytes ? capacity_ * 2 : bytes;
  capacity = (capacity + kAlign - 1) / kAlign * kAlign;
  void* memory = std::aligned_alloc(kAlign, capacity);
  if (!memory) throw std::bad_alloc();
  // Touch it once now, off the collective's critical path.
  std::memset(memory, 0, capacity);
  data_.reset(memory);
  capacity_ = capacity;
  return memory;
}

}  // namespace chorus
