// CudaEvent: an Event that is a cudaEvent_t recorded on a stream (timing
// disabled: it only marks a point). done() is cudaEventQuery, synchronize()
// cudaEventSynchronize (which yields the CPU: the event is created with
// cudaEventBlockingSync, since ranks often share few cores). A stream waits
// for it on the device (cudaStreamWaitEvent), without the host.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "chorus/event.h"
#include "chorus/status.h"

namespace chorus {

class CudaEvent : public Event {
 public:
  // An event recorded on `stream` now. The stream's device must be the
  // calling thread's current one (CudaDevice's calls make it so).
  static Status record(cudaStream_t stream, std::shared_ptr<const CudaEvent>* out);
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  // True once the work before it has run, or when its stream failed (the
  // event then never completes; the failure shows in the backend's work and
  // in to_host, and synchronize() logs it).
  bool done() const override;
  void synchronize() const override;
  cudaEvent_t get() const { return event_; }

 private:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  cudaEvent_t event_;
};

}  // namespace chorus
