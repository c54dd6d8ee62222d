#include "options/runtime_settings.h"

#include <cmath>

#include "options/usage_error.h"

namespace chorus::launcher {

const std::vector<RuntimeFlag>& runtime_flags() {
  static const std::vector<RuntimeFlag> flags = [] {
    std::vector<RuntimeFlag> out;
    for (const Setting& setting : settings()) {
      if (setting.flag.option == nullptr) continue;
      out.push_back({setting.flag.option, setting.variable, setting.flag.help, setting.is_switch, &setting});
    }
    return out;
  }();
  return flags;
}

std::pair<std::string, std::string> runtime_variable_for(const std::string& option, const std::string& value) {
  for (const RuntimeFlag& flag : runtime_flags()) {
    if (option != flag.option) continue;
    if (flag.is_switch) return {flag.variable, "1"};
    const Flag& scaled = flag.setting->flag;
    if (scaled.scale != 1.0) {
      const std::string unit = std::string("a number of ") + scaled.unit;
      const Number in_units{flag.setting->lo / scaled.scale, flag.setting->hi / scaled.scale, unit.c_str()};
      double units = 0.0;
      if (!in_units.parse(value, &units)) {
        throw UsageError("--" + option + "='" + value + "' is invalid: expected " + in_units.expected());
      }
      const std::string base = std::to_string(std::llround(units * scaled.scale));
      check_runtime_variable(flag.variable, base,
                             "--" + option + "='" + value + "' (" + base + " " + scaled.base_unit + ")");
      return {flag.variable, base};
    }
    check_runtime_variable(flag.variable, value, "--" + option + "='" + value + "'");
    return {flag.variable, value};
  }
  throw UsageError("--" + option + " is not a runtime option");
}

void check_runtime_variable(const std::string& name, const std::string& value, const std::string& origin) {
  const Setting* setting = find_setting(name);
  if (setting == nullptr) return;
  Config config;
  if (!setting->parse(value, &config)) throw UsageError(origin + " is invalid: expected " + setting->expected);
}

}  // namespace chorus::launcher
