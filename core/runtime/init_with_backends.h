// init() for a program that brings backends for devices of its own
// (Device::Kind::kCustom): the test suite runs the runtime over an
// asynchronous test device this way. Not part of the public API.
#pragma once

#include <vector>

#include "contracts/backend_registry.h"

namespace chorus::detail {

// Like chorus::init(), with `makers` ahead of the built-in backends. Every
// rank passes makers for the same devices.
void init_with_backends(std::vector<BackendMaker> makers);

}  // namespace chorus::detail
