// Building the runtime's entries from public API calls: shared by the API's
// files (api.cc, process_set_api.cc, ...), which check arguments first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/runtime.h"

namespace chorus {
namespace detail {

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
