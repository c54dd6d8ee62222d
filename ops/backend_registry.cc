#include "ops/backend_registry.h"

namespace chorus {

Backend* BackendRegistry::select(const Device& device) const {
  for (const auto& backend : backends_) {
    if (backend->supports(device)) return backend.get();
  }
  return nullptr;
}

}  // namespace chorus
