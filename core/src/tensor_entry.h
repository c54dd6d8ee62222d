// TensorEntry: everything the runtime holds for one enqueued tensor, from
// enqueue until its handle is completed.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "chorus/chorus.h"
#include "handle_state.h"
#include "message.h"

namespace chorus {

struct TensorEntry {
  Request request;
  Tensor input;
  Tensor output;                     // allreduce and broadcast (may equal input)
  OutputAllocator allocator;         // allgather, alltoall, reducescatter; may be empty
  std::vector<int64_t> splits;       // alltoall: rows sent to each rank
  std::shared_ptr<detail::HandleState> handle;
  std::chrono::steady_clock::time_point enqueued;
};

}  // namespace chorus
