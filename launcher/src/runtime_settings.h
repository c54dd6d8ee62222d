// Runtime options given to chorusrun (--cycle-time-ms 5, ...) become CHORUS_*
// variables in every rank's environment. They are checked here with the
// runtime's own parser (core/base/config.cc), so a value chorusrun accepts is
// one init() accepts, and a bad one is reported before anything starts.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace chorus::launcher {

struct RuntimeFlag {
  const char* option;    // "cycle-time-ms"
  const char* variable;  // "CHORUS_CYCLE_TIME_MS"
  const char* help;
  // A flag without a value (--autotune) that sets the variable to "1".
  bool is_switch = false;
};

// Every runtime option chorusrun has, in the order --help lists them.
const std::vector<RuntimeFlag>& runtime_flags();

// --option=value -> (CHORUS_..., value), validated; throws UsageError
// "--cycle-time-ms='x' is invalid: expected a number of milliseconds in [0, 10000]".
// --fusion-threshold-mb takes MiB (fractions allowed) and is passed on in bytes.
std::pair<std::string, std::string> runtime_variable_for(const std::string& option, const std::string& value);

// Checks a CHORUS_* variable's value the way init() will (variables init()
// does not read are accepted as they are); throws UsageError naming `origin`.
void check_runtime_variable(const std::string& name, const std::string& value, const std::string& origin);

}  // namespace chorus::launcher
