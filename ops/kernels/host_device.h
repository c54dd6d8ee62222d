// HostDevice: DeviceOps for host memory. Its stream is the calling thread:
// every call has finished when it returns, so every event it records is
// done, and waiting for a producer's event waits on the host.
#pragma once

#include "contracts/device.h"

namespace chorus {

class HostDevice : public DeviceOps {
 public:
  Device device() const override { return Device::cpu(); }
  Status allocate(size_t bytes, std::shared_ptr<void>* out) override;
  Status copy(const std::vector<Copy>& copies) override;
  Status scale(const void* in, void* out, int64_t count, DataType dtype, double factor) override;
  Status divide(void* buffer, int64_t count, DataType dtype, int64_t divisor) override;
  Status convert(const void* in, DataType from, void* out, DataType to, int64_t count) override;
  Status wait(std::shared_ptr<const Event> event) override;
  std::shared_ptr<const Event> record() override;
  Status to_host(void* host, const void* from, size_t bytes) override;
  Status from_host(void* to, const void* host, size_t bytes) override;
};

}  // namespace chorus
