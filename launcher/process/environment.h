// A snapshot of environment variables, so that planning a job reads the
// environment through a value tests can build, never through getenv().
#pragma once

#include <map>
#include <string>

namespace chorus::launcher {

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string> variables) : variables_(std::move(variables)) {}
  // This process's environment.
  static Environment current();

  // nullptr when unset.
  const char* get(const char* name) const;
  const std::map<std::string, std::string>& variables() const { return variables_; }

 private:
  std::map<std::string, std::string> variables_;
};

}  // namespace chorus::launcher
