// The public CUDA helpers (chorus/cuda.h) of a build with CUDA: thin, since
// the events are the CUDA device's own (ops/cuda/cuda_event.h). A build
// without CUDA has core/runtime/cuda_api_absent.cc instead.
#include "chorus/cuda.h"

#include <cuda_runtime_api.h>

#include <string>

#include "chorus/status.h"
#include "ops/cuda/cuda_device.h"
#include "ops/cuda/cuda_event.h"

namespace chorus {

bool cuda_built() { return true; }

std::shared_ptr<const Event> cuda_event_on(void* stream) {
  std::shared_ptr<const CudaEvent> event;
  throw_if_error(CudaEvent::record(static_cast<cudaStream_t>(stream), &event));
  return event;
}

void cuda_stream_wait(void* stream, const std::shared_ptr<const Event>& event) {
  if (!event) return;
  if (const auto* cuda = dynamic_cast<const CudaEvent*>(event.get())) {
    throw_if_error(cuda_status("cudaStreamWaitEvent (chorus::cuda_stream_wait)",
                               cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), cuda->get(), 0)));
    return;
  }
  event->synchronize();
}

}  // namespace chorus
