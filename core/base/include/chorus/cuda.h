// Handing GPU work to Chorus and taking results back without a host wait.
//
// A gradient that a kernel is still writing is submitted with
// `Tensor::ready = chorus::cuda_event_on(stream)`: the collective starts on
// the GPU once the producer's stream has reached that point, and the
// submitting thread does not wait. A consumer on the GPU makes its stream
// wait for the result with `chorus::cuda_stream_wait(stream,
// handle.completion_event())` instead of calling `handle.wait()`.
//
// A cudaStream_t is passed as `void*` (nullptr: the legacy default stream),
// so this header needs no CUDA headers. In a build without CUDA
// (CHORUS_WITH_CUDA=OFF) both functions throw chorus::Error saying so.
#pragma once

#include <memory>

#include "chorus/event.h"

namespace chorus {

// Whether this build of Chorus has its GPU half.
bool cuda_built();

// An event that is done once the work queued on `stream` so far has run.
std::shared_ptr<const Event> cuda_event_on(void* stream);

// The work queued on `stream` from now on starts after `event` is done: on
// the device for an event Chorus made on a GPU (cudaStreamWaitEvent);
// otherwise the calling thread waits for it first. A null event is done.
void cuda_stream_wait(void* stream, const std::shared_ptr<const Event>& event);

}  // namespace chorus
