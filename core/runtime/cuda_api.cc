// The public CUDA helpers (chorus/cuda.h): thin, since the events are the
// CUDA device's own (ops/cuda/cuda_event.h).
#include "chorus/cuda.h"

#include <string>

#include "chorus/status.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_device.h"
#include "ops/cuda/cuda_event.h"
#endif

namespace chorus {

#ifdef CHORUS_WITH_CUDA

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

#else

namespace {
[[noreturn]] void no_cuda(const char* function) {
  throw Error(Status::PreconditionFailed(std::string("chorus::") + function +
                                         ": this build of Chorus has no CUDA support (built with "
                                         "CHORUS_WITH_CUDA=OFF); rebuild it where the CUDA Toolkit is installed"));
}
}  // namespace

bool cuda_built() { return false; }

std::shared_ptr<const Event> cuda_event_on(void*) { no_cuda("cuda_event_on"); }

void cuda_stream_wait(void*, const std::shared_ptr<const Event>&) { no_cuda("cuda_stream_wait"); }

#endif

}  // namespace chorus
