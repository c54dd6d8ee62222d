// The settings table (settings.def) as rows a program can walk: the parser
// (Config::from_env), the settings agreement, chorusrun's runtime flags and
// docs/CONFIGURATION.md are all made from these. Adding a setting is one row
// in settings.def, and the code that uses its Config member.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/setting_kinds.h"

namespace chorus {

struct Setting {
  const char* variable;  // CHORUS_...
  const char* help;
  Agreement agreement;
  Flag flag;
  bool is_switch;            // a Switch: chorusrun's flag takes no value
  double lo;                 // an Integer's or Number's range, else 0
  double hi;
  std::string expected;      // what it accepts: "an integer number of bytes in [0, 1099511627776]"
  std::string default_text;  // the default as the variable spells it; "unset", "empty" when none
  // Parses `text` into its member of `config`; false (and `config` as it
  // was) when the kind rejects it.
  std::function<bool(const std::string& text, Config* config)> parse;
  // The member's value as the variable spells it.
  std::function<std::string(const Config& config)> spell;
  // For alike settings: the number ranks compare, and its spelling.
  std::function<int64_t(const Config& config)> agreed;
  std::function<std::string(int64_t value)> spell_agreed;
  // Values at the edges of what it accepts, and just beyond them.
  std::vector<std::string> edges;
  std::vector<std::string> beyond;
};

// Every row, in the order of settings.def.
const std::vector<Setting>& settings();
// The row of `variable`, or null when init() does not read it.
const Setting* find_setting(const std::string& variable);

}  // namespace chorus
