// The example's errors are chorus::Error, like the library's: one exception
// type for a caller to catch, whose what() says what was wrong and what was
// expected.
#pragma once

#include <string>

#include "chorus/status.h"

namespace train_mnist {

[[noreturn]] inline void fail(const std::string& message) {
  throw chorus::Error(chorus::Status::InvalidArgument(message));
}

}  // namespace train_mnist
