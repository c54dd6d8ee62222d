// StreamEvent: a chorus::Event that is a cudaEvent_t recorded on one of this
// program's streams. A gradient handed to Chorus carries one as
// Tensor::ready, so the allreduce starts once the kernels that write the
// gradient have run, without this thread waiting for them.
//
// The public API has no CUDA event type of its own yet (ops/cuda/cuda_event.h
// is the runtime's, not installed with chorus.h), so the example wraps the
// CUDA runtime's directly: done() is cudaEventQuery, synchronize()
// cudaEventSynchronize. Events are created with cudaEventBlockingSync, so a
// thread that waits for one sleeps instead of spinning (ranks often share
// few cores), and without timing, which they do not need.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "chorus/event.h"

namespace train_mnist_cuda {

class StreamEvent : public chorus::Event {
 public:
  // An event recorded on `stream` now. Throws chorus::Error when CUDA fails.
  static std::shared_ptr<const StreamEvent> record(cudaStream_t stream);
  ~StreamEvent() override;
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;

  // chorus::Event has no way to report an error: a failed query counts as
  // done and a failed wait returns, and the failure (sticky on the device)
  // is reported by the next checked CUDA call on this program's stream.
  bool done() const override;
  void synchronize() const override;
  cudaEvent_t get() const { return event_; }

 private:
  explicit StreamEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_;
};

// Blocks (sleeping, not spinning) until everything queued on `stream` so far
// has run; throws chorus::Error naming what failed.
void wait_for_stream(cudaStream_t stream);

}  // namespace train_mnist_cuda
