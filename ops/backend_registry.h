// BackendRegistry: the backends this build has, in priority order. The
// executor asks it for each response; the first backend that supports the
// tensor's device runs it (NCCL for CUDA memory, MPI for host memory).
#pragma once

#include <memory>
#include <vector>

#include "ops/backend.h"

namespace chorus {

class BackendRegistry {
 public:
  void add(std::unique_ptr<Backend> backend) { backends_.push_back(std::move(backend)); }
  // nullptr when no backend supports the device.
  Backend* select(const Device& device) const;
  bool supports(const Device& device) const { return select(device) != nullptr; }

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

}  // namespace chorus
