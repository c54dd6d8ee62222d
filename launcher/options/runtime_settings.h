// Runtime options given to chorusrun (--cycle-time-ms 5, ...) become CHORUS_*
// variables in every rank's environment. The flags are the rows of the
// runtime's settings table that name one (core/base/settings.def), and
// values are checked with the runtime's own parser, so a value chorusrun
// accepts is one init() accepts, and a bad one is reported before anything
// starts.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/settings.h"

namespace chorus::launcher {

struct RuntimeFlag {
  const char* option;    // "cycle-time-ms"
  const char* variable;  // "CHORUS_CYCLE_TIME_MS"
  const char* help;
  // A flag without a value (--autotune) that sets the variable to "1".
  bool is_switch = false;
  const Setting* setting = nullptr;
};

// Every runtime option chorusrun has, in the order --help lists them.
const std::vector<RuntimeFlag>& runtime_flags();

// --option=value -> (CHORUS_..., value), validated; throws UsageError
// "--cycle-time-ms='x' is invalid: expected a number of milliseconds in [0, 10000]".
// A flag with a scale (--fusion-threshold-mb takes MiB, fractions allowed)
// passes its value on in the variable's unit (bytes).
std::pair<std::string, std::string> runtime_variable_for(const std::string& option, const std::string& value);

// Checks a CHORUS_* variable's value the way init() will (variables init()
// does not read are accepted as they are); throws UsageError naming `origin`.
void check_runtime_variable(const std::string& name, const std::string& value, const std::string& origin);

}  // namespace chorus::launcher
