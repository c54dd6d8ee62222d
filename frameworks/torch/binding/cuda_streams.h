// Handing CUDA tensors between LibTorch's streams and Chorus's, in both
// directions, without a thread waiting for the GPU.
//
// Producer: a gradient that autograd's kernels are still writing on the
// current CUDA stream is handed to the runtime with an event on that stream
// (Tensor::ready), so that Chorus's stream starts the collective after those
// kernels.
// Consumer: the caller's current stream waits for the collective's
// completion event, and the tensors Chorus used are recorded as in use on
// that stream, so that LibTorch's caching allocator does not hand their
// memory out again before the collective is done even when the caller drops
// them at once.
//
// This is the only place the front end touches CUDA streams; it is compiled
// in only against a CUDA build of LibTorch (CHORUS_TORCH_CUDA, set by CMake
// when the torch_cuda target exists): Debian's LibTorch is CPU-only, where a
// CUDA tensor cannot exist.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {
namespace detail {

// None for a CPU tensor (ready when submitted); for a CUDA tensor, an event
// recorded now on its device's current stream.
std::shared_ptr<const Event> ready_event(const ::torch::Tensor& tensor);

// Makes the results of `handle` safe to use from the caller's side, or
// throws the collective's error. For an op on CUDA tensors (`on_device` is
// one of them) the calling thread waits only until the collective has been
// handed to the GPU; the current stream of that device waits for its
// completion on the device, and every defined tensor that `in_use` returns
// (called after that hand-over, when outputs the runtime allocates exist) is
// recorded on that stream. Otherwise the calling thread waits for the
// collective.
// Returns whether the wait was left to the stream (then the handle may still
// be in progress on the host side).
bool await_result(const chorus::Handle& handle, const ::torch::Tensor& on_device,
                  const std::function<std::vector<::torch::Tensor>()>& in_use);

}  // namespace detail
}  // namespace torch
}  // namespace chorus
