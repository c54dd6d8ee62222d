#include "ops/backend_registry.h"

namespace chorus {

Backend* BackendRegistry::select(const Device& device) const {
  for (const auto& backend : backends_) {
    if (backend->supports(device)) return backend.get();
  }
  return nullptr;
}

void BackendRegistry::abort_all(const std::string& reason) const {
  for (const auto& backend : backends_) backend->abort(reason);
}

}  // namespace chorus
