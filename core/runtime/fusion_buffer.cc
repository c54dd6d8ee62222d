#include "runtime/fusion_buffer.h"

namespace chorus {

Status FusionBuffer::get(DeviceOps* device, size_t bytes, void** out) {
  if (bytes <= capacity_ && data_) {
    *out = data_.get();
    return Status::OK();
  }
  // Grow geometrically so a slowly growing fused size does not reallocate
  // (and re-touch) every cycle.
  const size_t capacity = capacity_ * 2 > bytes ? capacity_ * 2 : bytes;
  // Work queued on the device may still use the old buffer.
  if (data_) device->record()->synchronize();
  std::shared_ptr<void> memory;
  CHORUS_RETURN_IF_ERROR(device->allocate(capacity, &memory));
  // Touch it once now, off the collective's critical path.
  CHORUS_RETURN_IF_ERROR(device->copy({DeviceOps::Copy{memory.get(), nullptr, capacity}}));
  data_ = std::move(memory);
  capacity_ = capacity;
  *out = data_.get();
  return Status::OK();
}

}  // namespace chorus
