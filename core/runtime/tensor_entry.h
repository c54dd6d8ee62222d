// TensorEntry: everything the runtime holds for one enqueued tensor, from
// enqueue until its handle is completed.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/handle_state.h"
#include "protocol/message.h"

namespace chorus {

// The tensors' dtype, shape and device are the request's: the entry keeps
// only their memory (copying a Tensor copies its shape, one allocation each).
struct TensorEntry {
  Request request;
  void* input_data = nullptr;
  void* output_data = nullptr;       // allreduce and broadcast (may equal input_data)
  OutputAllocator allocator;         // allgather, alltoall, reducescatter; may be empty
  std::vector<int64_t> splits;       // alltoall: rows sent to each rank
  std::shared_ptr<const Event> ready;  // the input's producer's; none: ready now
  std::shared_ptr<detail::HandleState> handle;
  int member = 0;                    // its index in the handle's group (0 alone)
  std::chrono::steady_clock::time_point enqueued;

  size_t bytes() const { return static_cast<size_t>(num_elements(request.shape)) * dtype_size(request.dtype); }
};

}  // namespace chorus
