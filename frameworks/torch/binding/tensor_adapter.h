// The tensor adapter: the one place where the torch front end decides whether
// a torch tensor can go through the runtime, and builds the non-owning
// chorus::Tensor view of its memory. The ops, DistributedOptimizer's
// gradients (compressed or not) and state broadcast all go through it, so a
// tensor is accepted or refused with the same message whichever path it takes.
//
// Devices are mapped faithfully (CPU to Device::cpu(), CUDA to
// Device::cuda(index)) and the runtime decides which of them this build
// serves; a device Chorus has no kind for (meta, mps, xla, ...) is refused
// with the same message as a device no backend serves.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "chorus/chorus.h"
#include "pending_op.h"

namespace chorus {
namespace torch {
namespace detail {

// The error for a tensor on a device no backend in this build serves:
// kInvalidArgument, "tensor '<name>' is on device <device>: no backend in this
// build supports tensors on <device>".
Status unsupported_device(const std::string& name, const std::string& device);

// Chorus's device for a torch device. Throws unsupported_device() naming
// `name` for a device Chorus has no kind for.
Device to_chorus_device(const c10::Device& device, const std::string& name);
c10::Device to_torch_device(const Device& device);

// Throws the runtime's refusal (chorus::check_device) naming the tensor when
// no backend of this rank supports its (defined) device: for a CUDA tensor,
// why ("tensor 'w' is on cuda:0 but this rank sees no CUDA device (...)").
// Asks the runtime, so needs chorus::init().
void check_device(const ::torch::Tensor& tensor, const std::string& name);
// Throws chorus::Error (kInvalidArgument) naming the tensor when it is
// undefined, on a device no backend in this build supports, not dense, or of
// a dtype Chorus does not support. Asks the runtime, so needs chorus::init().
void check_usable(const ::torch::Tensor& tensor, const std::string& name);
// As check_usable, and refuses tensors whose elements share memory (an
// expanded view): an in-place result cannot be written back into them.
void check_writable(const ::torch::Tensor& tensor, const std::string& name);

// The tensor itself when contiguous, else a contiguous copy.
::torch::Tensor contiguous(const ::torch::Tensor& tensor);
// A new contiguous tensor of the same shape and device, not tracking grad,
// of the tensor's dtype or of `dtype`.
::torch::Tensor empty_like_contiguous(const ::torch::Tensor& tensor);
::torch::Tensor empty_like_contiguous(const ::torch::Tensor& tensor, c10::ScalarType dtype);

// A view of a contiguous tensor's memory, on its device. The caller checked
// the tensor (check_usable) or made it (empty_like_contiguous of one).
chorus::Tensor view_of(const ::torch::Tensor& contiguous_tensor, const std::string& name);

// An OutputAllocator that allocates a torch tensor on the device the runtime
// asks for into `slot`. It runs on the runtime's background thread.
OutputAllocator torch_allocator(std::shared_ptr<AllocatedOutput> slot);

}  // namespace detail
}  // namespace torch
}  // namespace chorus
