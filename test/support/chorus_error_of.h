// The message of the exception a call throws (chorus::Error unless the test
// names another type, e.g. the launcher's UsageError), for tests that compare
// error texts; "<no error thrown>" when it throws none of that type.
#pragma once

#include <functional>
#include <string>

#include "chorus/status.h"

namespace chorus_test {

// What error_of returns for a call that throws no error of its type.
inline constexpr char kNoError[] = "<no error thrown>";

template <typename Exception = chorus::Error>
std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Exception& e) {
    return e.what();
  }
  return kNoError;
}

}  // namespace chorus_test
