#include "ops/nccl/nccl_work.h"

#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_device.h"

namespace chorus {

bool NcclWork::test() {
  if (finished_) return true;
  // The event first, the communicator's state after it: an aborted or
  // failed collective's kernel reports its event done too, with garbage in
  // the output, but a failure is on record (NCCL's error state, or the
  // communicator's failure) before anything stops the kernel, so a done
  // event followed by a clean state is a collective that ran.
  const cudaError_t queried = cudaEventQuery(done_->get());
  const bool done = queried != cudaErrorNotReady;
  Status state = comm_->poll();
  if (state.ok() && !done) return false;
  // The stream itself failed (a sticky CUDA error): the event will never
  // complete, and the collective's result is not there.
  if (state.ok() && queried != cudaSuccess) {
    state = cuda_status(("the stream of the NCCL " + collective_).c_str(), queried);
  }
  // A communicator closed in order (ncclCommFinalize flushed its work) is
  // not a failure of work that finished; after an abort or an error a
  // finished event proves nothing (the aborted kernel ends early too).
  if (state.code() == StatusCode::kShutdown && queried == cudaSuccess) state = Status::OK();
  finished_ = true;
  outcome_ = state;
  return true;
}

Status NcclWork::wait() {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::chrono::microseconds backoff{0};
  while (!test()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      comm_->fail(Status::Timeout("NCCL " + collective_ + " did not finish within " + seconds_text(timeout_) +
                                  ": a peer rank did not take part; the NCCL communicator was aborted"));
      finished_ = true;
      outcome_ = comm_->failure();
      break;
    }
    sleep_and_back_off(&backoff);
  }
  return outcome_;
}

}  // namespace chorus
