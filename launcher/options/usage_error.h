// The launcher's one error type: bad input (flags, environment, files). Its
// message names what was wrong and what was expected; chorusrun prints it
// and exits with status 2. Parsers throw it because they run once, at
// start-up, in a tool whose only sensible reaction is to stop and say why.
#pragma once

#include <stdexcept>
#include <string>

namespace chorus::launcher {

class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace chorus::launcher
