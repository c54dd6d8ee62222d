#include "stream_event.h"

#include "cuda_check.h"

namespace train_mnist_cuda {

std::shared_ptr<const StreamEvent> StreamEvent::record(cudaStream_t stream) {
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync));
  std::shared_ptr<const StreamEvent> wrapped(new StreamEvent(event));
  CUDA_CHECK(cudaEventRecord(event, stream));
  return wrapped;
}

StreamEvent::~StreamEvent() {
  // Destroying an event whose work is still queued is allowed: CUDA releases
  // it once the work has run.
  (void)cudaEventDestroy(event_);
}

bool StreamEvent::done() const { return cudaEventQuery(event_) != cudaErrorNotReady; }

void StreamEvent::synchronize() const { (void)cudaEventSynchronize(event_); }

void wait_for_stream(cudaStream_t stream) {
  const std::shared_ptr<const StreamEvent> event = StreamEvent::record(stream);
  CUDA_CHECK(cudaEventSynchronize(event->get()));
}

}  // namespace train_mnist_cuda
