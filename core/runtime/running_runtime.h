// The process's running runtime, for API functions outside api.cc (which
// owns it): a reference held for the duration of one call.
#pragma once

#include <memory>

#include "runtime/runtime.h"

namespace chorus {
namespace detail {

// Throws chorus::Error when Chorus is not initialized, was shut down, or
// has stopped (then saying why).
std::shared_ptr<Runtime> running_runtime();

}  // namespace detail
}  // namespace chorus
