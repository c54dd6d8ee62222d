// Runtime configuration, read once from CHORUS_* environment variables at
// init(). Every variable is a row of the settings table (settings.def), which
// declares its member here, its type, default and accepted values; a value
// that does not parse or is out of range fails init() with a message naming
// the variable, the value and what is accepted. Everything reads the members
// directly: no setting is looked up by name after init().
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "base/logging.h"
#include "base/setting_kinds.h"

namespace chorus {

struct Config {
  // One member per row of settings.def, holding its default until from_env
  // reads the variable.
#define CHORUS_SETTING(field, variable, kind, default_value, agreement, flag, help) \
  decltype(kind)::Value field = default_value;
#include "base/settings.def"
#undef CHORUS_SETTING

  // Whether CHORUS_SHM_ALLREDUCE_THRESHOLD and CHORUS_SHM_PROBE were set in
  // the environment: a threshold given without CHORUS_SHM_PROBE means the
  // probe is off, since the user chose the sizes.
  bool shm_allreduce_threshold_given = false;
  bool shm_probe_given = false;
  // The probe mode in force (the rule above).
  ShmProbeMode effective_shm_probe() const {
    return shm_allreduce_threshold_given && !shm_probe_given ? ShmProbeMode::kOff : shm_probe;
  }

  // The CHORUS_* variables that were set in the environment, in the order
  // from_env reads them: explicit choices the autotuner must not change.
  std::vector<std::string> explicitly_set;
  bool was_set(const std::string& variable) const;

  using Lookup = std::function<const char*(const char* name)>;
  // Reads every variable through `lookup` (std::getenv by default).
  static Status from_env(Config* out, const Lookup& lookup = nullptr);
};

// What ranks agree on for CHORUS_SHM_PROBE: the mode in force.
int64_t agreed_shm_probe(const Config& config);

}  // namespace chorus
