// The front end's answer to bad input at its public API: a chorus::Error
// carrying Status::InvalidArgument with the caller's message (what was wrong
// and what was expected).
#pragma once

#include <string>

#include "chorus/chorus.h"

namespace chorus::torch {

[[noreturn]] inline void throw_invalid_argument(const std::string& message) {
  throw Error(Status::InvalidArgument(message));
}

}  // namespace chorus::torch
