// The tensor adapter: checks that a torch tensor can go through the runtime
// and builds the non-owning chorus::Tensor view of its memory.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

#include "chorus/chorus.h"
#include "pending_op.h"

namespace chorus {
namespace torch {
namespace detail {

// Throws chorus::Error naming the tensor when it is undefined, not a dense
// CPU tensor, or of a dtype Chorus does not support.
void check_usable(const ::torch::Tensor& tensor, const std::string& name);
// As check_usable, and refuses tensors whose elements share memory (an
// expanded view): an in-place result cannot be written back into them.
void check_writable(const ::torch::Tensor& tensor, const std::string& name);

// The tensor itself when contiguous, else a contiguous copy.
::torch::Tensor contiguous(const ::torch::Tensor& tensor);
// A new contiguous tensor of the same shape and dtype, not tracking grad.
::torch::Tensor empty_like_contiguous(const ::torch::Tensor& tensor);

// A view of a contiguous CPU tensor's memory (the caller checked it).
chorus::Tensor view_of(const ::torch::Tensor& contiguous_tensor, const std::string& name);

// An OutputAllocator that allocates a torch tensor into `slot`. It runs on
// the runtime's background thread.
OutputAllocator torch_allocator(std::shared_ptr<AllocatedOutput> slot);

}  // namespace detail
}  // namespace torch
}  // namespace chorus
