// What the public API's files (api.cc, process_set_api.cc, timeline_api.cc,
// point_to_point_api.cc) share, defined in api.cc, which owns the process's
// runtime: a reference to it for the duration of one call, and turning a
// call (its arguments checked first, runtime/argument_checks.h) into the
// runtime's entries.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/runtime.h"

namespace chorus {
namespace detail {

// Throws chorus::Error when Chorus is not initialized, was shut down, or
// has stopped (then saying why).
std::shared_ptr<Runtime> running_runtime();

// A request for `tensor`'s dtype, shape and device; the op's own fields
// are the caller's to fill.
Request base_request(const std::string& name, OpType op, const Tensor& tensor, int rank);
TensorEntry make_entry(Request request, const Tensor& input, const Tensor& output,
                       std::shared_ptr<HandleState> handle);
// Enqueue one group of entries (its first entry's handle is returned) or one
// entry; throw chorus::Error when the runtime refuses them.
Handle submit(Runtime& rt, std::vector<TensorEntry> entries);
Handle submit_one(Runtime& rt, TensorEntry&& entry);

}  // namespace detail
}  // namespace chorus
