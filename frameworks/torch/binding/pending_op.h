// PendingOp: everything one collective on torch tensors needs until it is
// done, shared by the TorchHandle(s) the caller holds.
//
// The runtime only sees chorus::Tensor views, so the torch tensors behind
// them (the contiguous inputs, the outputs, and the caller's tensors that
// in-place results are copied back into) must stay alive here until the
// collective has finished.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {
namespace detail {

// An output the runtime allocates on its background thread through an
// OutputAllocator (allgather, alltoall, reducescatter). Shared between the
// allocator and the PendingOp; the handle's completion orders the write on
// the background thread before any read by a waiter.
struct AllocatedOutput {
  ::torch::Tensor tensor;
};

struct PendingOp {
  std::string name;
  chorus::Handle handle;
  // Contiguous inputs the runtime reads (the caller's own tensors when they
  // were already contiguous): kept alive until done.
  std::vector<::torch::Tensor> inputs;
  // What the runtime writes, one per tensor of the op.
  std::vector<::torch::Tensor> outputs;
  // For in-place ops on non-contiguous tensors: the caller's tensor that
  // outputs[i] is copied back into once done (undefined when outputs[i] is
  // the caller's tensor itself, or the op is out of place).
  std::vector<::torch::Tensor> copy_back;
  // For ops whose output size is known only after negotiation: one per
  // member (empty for other ops).
  std::vector<std::shared_ptr<AllocatedOutput>> allocated;

  // Waits until the results may be used by the caller, or throws the op's
  // error: for CUDA tensors the caller's current stream waits for the
  // collective (cuda_streams.h), otherwise the calling thread does.
  void await() const;
  // Whether await() left the wait to a CUDA stream, after which the results
  // may be used (on that stream) though the handle may not be done yet.
  bool awaited_on_stream() const;

  // Finishes the op once await() returned or the handle is done and ok:
  // copies results back (once, whoever calls first; on a CUDA device on the
  // current stream, after the collective) and returns the outputs as the
  // caller sees them.
  std::vector<::torch::Tensor> results() const;

 private:
  mutable std::mutex mutex_;
  mutable bool finished_ = false;
  mutable bool awaited_on_stream_ = false;
};

}  // namespace detail
}  // namespace torch
}  // namespace chorus
