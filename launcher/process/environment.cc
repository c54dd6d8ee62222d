#include "process/environment.h"

extern char** environ;

namespace chorus::launcher {

Environment Environment::current() {
  std::map<std::string, std::string> variables;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text(*entry);
    const size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    variables.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return Environment(std::move(variables));
}

const char* Environment::get(const char* name) const {
  const auto it = variables_.find(name);
  return it == variables_.end() ? nullptr : it->second.c_str();
}

}  // namespace chorus::launcher
