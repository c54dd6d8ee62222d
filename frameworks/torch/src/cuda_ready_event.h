// The producer's side of a CUDA tensor: a gradient that autograd's kernels
// are still writing on the current CUDA stream is handed to the runtime with
// an event on that stream (Tensor::ready), so that Chorus's stream starts the
// collective after those kernels and no thread waits for them. This is the
// only place the front end touches CUDA streams; it is compiled in only
// against a CUDA build of LibTorch (CHORUS_TORCH_CUDA, set by CMake when the
// torch_cuda target exists): Debian's LibTorch is CPU-only, where a CUDA
// tensor cannot exist.
#pragma once

#include <memory>

#include <torch/types.h>

#include "chorus/event.h"

namespace chorus {
namespace torch {
namespace detail {

// None for a CPU tensor (ready when submitted); for a CUDA tensor, an event
// recorded now on its device's current stream.
std::shared_ptr<const Event> ready_event(const ::torch::Tensor& tensor);

}  // namespace detail
}  // namespace torch
}  // namespace chorus
