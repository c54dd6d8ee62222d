#include "contracts/backend_registry.h"

namespace chorus {

Backend* BackendRegistry::select(const Device& device) const {
  for (const auto& backend : backends_) {
    if (backend->supports(device)) return backend.get();
  }
  return nullptr;
}

bool BackendRegistry::run_on_any_thread() const {
  for (const auto& backend : backends_) {
    if (!backend->runs_on_any_thread()) return false;
  }
  return true;
}

Status BackendRegistry::check(const std::string& name, const Device& device) const {
  if (supports(device)) return Status::OK();
  const auto why = explanations_.find(device.kind);
  if (why != explanations_.end()) {
    return Status::InvalidArgument("tensor '" + name + "' is on " + device.to_string() + " but " + why->second);
  }
  return Status::InvalidArgument("'" + name + "': no backend in this build supports tensors on " +
                                 device.to_string());
}

Status BackendRegistry::check_reduction(const std::string& name, const Device& device, DataType dtype) const {
  const Backend* backend = select(device);
  if (backend == nullptr) return Status::OK();
  const Status status = backend->check_reduction(dtype);
  if (status.ok()) return status;
  return Status(status.code(), "'" + name + "': " + status.message());
}

void BackendRegistry::abort_all(const std::string& reason) const {
  for (const auto& backend : backends_) backend->abort(reason);
}

}  // namespace chorus
