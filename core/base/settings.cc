#include "base/settings.h"

#include <type_traits>

namespace chorus {
namespace {

template <typename Kind>
constexpr bool has_range() {
  return std::is_same_v<Kind, Integer> || std::is_same_v<Kind, Number>;
}

template <typename Kind>
constexpr bool can_agree() {
  return !std::is_same_v<Kind, Text>;
}

template <typename Kind>
Setting make_setting(typename Kind::Value Config::*field, const char* variable, const Kind& kind, Rule rule,
                     const Flag& flag, const char* help) {
  Setting s;
  s.variable = variable;
  s.help = help;
  s.agreement = rule.agreement;
  s.flag = flag;
  s.is_switch = std::is_same_v<Kind, Switch>;
  s.lo = 0.0;
  s.hi = 0.0;
  if constexpr (has_range<Kind>()) {
    s.lo = static_cast<double>(kind.lo);
    s.hi = static_cast<double>(kind.hi);
  }
  s.expected = kind.expected();
  s.default_text = kind.spell_default(Config().*field);
  s.parse = [kind, field](const std::string& text, Config* config) {
    typename Kind::Value value{};
    if (!kind.parse(text, &value)) return false;
    config->*field = value;
    return true;
  };
  s.spell = [kind, field](const Config& config) { return kind.spell(config.*field); };
  if constexpr (can_agree<Kind>()) {
    if (rule.agreed != nullptr) {
      s.agreed = rule.agreed;
    } else {
      s.agreed = [kind, field](const Config& config) { return kind.agreed(config.*field); };
    }
    s.spell_agreed = [kind](int64_t value) { return kind.spell_agreed(value); };
  }
  s.edges = kind.edges();
  s.beyond = kind.beyond();
  return s;
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = {
#define CHORUS_SETTING(field, variable, kind, default_value, agreement, flag, help) \
  make_setting(&Config::field, variable, kind, agreement, flag, help),
#include "base/settings.def"
#undef CHORUS_SETTING
  };
  return table;
}

const Setting* find_setting(const std::string& variable) {
  for (const Setting& setting : settings()) {
    if (variable == setting.variable) return &setting;
  }
  return nullptr;
}

}  // namespace chorus
