#include "process/command.h"

namespace chorus::launcher {

std::string shell_quote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true;
  for (char c : word) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == ',' || c == '=' ||
                      c == '+' || c == '@' || c == '%';
    plain = plain && safe;
  }
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) {
    if (c == '\'') quoted += "'\\''"; else quoted += c;
  }
  return quoted + "'";
}

std::string Command::to_shell() const {
  std::string out;
  for (const auto& [name, value] : environment) out += name + "=" + shell_quote(value) + " ";
  for (size_t i = 0; i < argv.size(); ++i) out += (i ? " " : "") + shell_quote(argv[i]);
  return out;
}

}  // namespace chorus::launcher
