// The message of the UsageError `f` throws, or "(no error)".
#pragma once

#include <functional>
#include <string>

#include "usage_error.h"

namespace chorus::launcher {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace chorus::launcher
