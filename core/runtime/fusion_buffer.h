// FusionBuffer: a persistent staging buffer in one device's memory, for
// fused collectives. It grows to the largest size a cycle needed and is
// reused afterwards: on these machines the first touch of fresh memory costs
// ~15 us per page, so allocating per step would dominate small collectives.
#pragma once

#include <cstddef>
#include <memory>

#include "chorus/status.h"
#include "contracts/device.h"

namespace chorus {

class FusionBuffer {
 public:
  // At least `bytes` of `device`'s memory, 64-byte aligned; contents
  // unspecified. The same device on every call.
  Status get(DeviceOps* device, size_t bytes, void** out);
  size_t capacity() const { return capacity_; }

 private:
  std::shared_ptr<void> data_;
  size_t capacity_ = 0;
};

}  // namespace chorus
