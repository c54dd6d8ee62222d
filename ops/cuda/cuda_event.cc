#include "ops/cuda/cuda_event.h"

#include "base/logging.h"
#include "ops/cuda/cuda_device.h"

namespace chorus {

Status CudaEvent::record(cudaStream_t stream, std::shared_ptr<const CudaEvent>* out) {
  cudaEvent_t event = nullptr;
  CHORUS_RETURN_IF_ERROR(
      cuda_status("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync)));
  const cudaError_t recorded = cudaEventRecord(event, stream);
  if (recorded != cudaSuccess) {
    cudaEventDestroy(event);
    return cuda_status("cudaEventRecord", recorded);
  }
  out->reset(new CudaEvent(event));
  return Status::OK();
}

// Destroying an event whose work is still queued is allowed: CUDA releases
// it once the event completes.
CudaEvent::~CudaEvent() { cudaEventDestroy(event_); }

// An error other than "not ready" means the stream failed (a kernel fault
// is sticky): the event will never complete, so it counts as done, and the
// failure shows where it is reported, in the backend's work or to_host().
bool CudaEvent::done() const { return cudaEventQuery(event_) != cudaErrorNotReady; }

void CudaEvent::synchronize() const {
  const Status status = cuda_status("cudaEventSynchronize", cudaEventSynchronize(event_));
  if (!status.ok()) CHORUS_LOG(kError, status.message());
}

}  // namespace chorus
