// The message of the chorus::Error a call throws, for tests that compare
// error texts; "<no chorus::Error thrown>" when it throws none.
#pragma once

#include <functional>
#include <string>

#include "chorus/status.h"

namespace chorus_test {

inline std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const chorus::Error& e) {
    return e.what();
  }
  return "<no chorus::Error thrown>";
}

}  // namespace chorus_test
