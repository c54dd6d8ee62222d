// HostBackend: the base of the backends whose tensors live in host memory
// (MPI, shared memory in front of it, the hierarchical path). Their
// collectives run on the calling thread, so the work they return has
// finished (finished_work), and their device operations are the host's
// kernels (HostDevice), whose stream is the calling thread too. The
// executor reaches such a backend's collectives directly: there is no
// adapter between the two.
#pragma once

#include "contracts/backend.h"
#include "ops/kernels/host_device.h"

namespace chorus {

class HostBackend : public Backend {
 public:
  bool supports(const Device& device) const override { return device.kind == Device::Kind::kCPU; }
  DeviceOps* device_ops(const Device&) override { return &device_; }
  bool runs_on_any_thread() const override { return true; }

 private:
  HostDevice device_;
};

}  // namespace chorus
