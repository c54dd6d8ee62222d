#include "base/config.h"

#include <cstdlib>
#include <string>

#include "base/settings.h"

namespace chorus {

Status Config::from_env(Config* out, const Lookup& lookup) {
  // Parse into a fresh Config so that a failure leaves *out untouched and a
  // reused *out never leaks values from an earlier call.
  Config config;
  for (const Setting& setting : settings()) {
    const char* raw = lookup ? lookup(setting.variable) : std::getenv(setting.variable);
    if (raw == nullptr) continue;
    const std::string value(raw);
    if (!setting.parse(value, &config)) {
      return Status::InvalidArgument(std::string(setting.variable) + "='" + value +
                                     "' is invalid: expected " + setting.expected);
    }
    config.explicitly_set.emplace_back(setting.variable);
  }
  config.shm_allreduce_threshold_given = config.was_set("CHORUS_SHM_ALLREDUCE_THRESHOLD");
  config.shm_probe_given = config.was_set("CHORUS_SHM_PROBE");
  *out = config;
  return Status::OK();
}

bool Config::was_set(const std::string& variable) const {
  for (const std::string& name : explicitly_set) {
    if (name == variable) return true;
  }
  return false;
}

int64_t agreed_shm_probe(const Config& config) { return static_cast<int64_t>(config.effective_shm_probe()); }

}  // namespace chorus
