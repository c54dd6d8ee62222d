#include "tensor_view.h"

#include <exception>
#include <sstream>
#include <utility>

#include <ATen/MemoryOverlap.h>

#include "chorus/torch/ops.h"

namespace chorus {
namespace torch {
namespace detail {

void check_usable(const ::torch::Tensor& tensor, const std::string& name) {
  if (!tensor.defined()) {
    throw Error(Status::InvalidArgument("tensor '" + name +
                                        "' is undefined; expected a defined tensor"));
  }
  if (tensor.device().type() != c10::DeviceType::CPU) {
    throw Error(Status::InvalidArgument(
        "tensor '" + name + "' is on device " + tensor.device().str() +
        "; expected a CPU tensor (GPU tensors need the NCCL backend, which Chorus does not have yet)"));
  }
  if (tensor.layout() != c10::kStrided) {
    std::ostringstream layout;
    layout << tensor.layout();
    throw Error(Status::InvalidArgument("tensor '" + name + "' has layout " + layout.str() +
                                        "; expected a dense (strided) tensor"));
  }
  (void)to_chorus_dtype(tensor.scalar_type(), name);
}

void check_writable(const ::torch::Tensor& tensor, const std::string& name) {
  check_usable(tensor, name);
  if (at::has_internal_overlap(tensor) == at::MemOverlap::Yes) {
    throw Error(Status::InvalidArgument(
        "tensor '" + name +
        "' has elements that share memory (an expanded view), so an in-place result cannot be "
        "written into it; expected a tensor without overlapping elements (e.g. .clone() it)"));
  }
}

::torch::Tensor contiguous(const ::torch::Tensor& tensor) {
  // The copy is raw memory for the runtime, not part of any autograd graph.
  return tensor.is_contiguous() ? tensor : tensor.detach().contiguous();
}

::torch::Tensor empty_like_contiguous(const ::torch::Tensor& tensor) {
  return ::torch::empty(tensor.sizes(), ::torch::TensorOptions().dtype(tensor.scalar_type()));
}

chorus::Tensor view_of(const ::torch::Tensor& contiguous_tensor, const std::string& name) {
  const ::torch::Tensor& t = contiguous_tensor;
  return chorus::Tensor(t.data_ptr(), to_chorus_dtype(t.scalar_type(), name),
                        Shape(t.sizes().begin(), t.sizes().end()), Device::cpu());
}

OutputAllocator torch_allocator(std::shared_ptr<AllocatedOutput> slot) {
  return [slot = std::move(slot)](const Shape& shape, DataType dtype, Device device,
                                  chorus::Tensor* out) -> Status {
    if (device.kind != Device::Kind::kCPU) {
      return Status::InvalidArgument("the torch front end allocates CPU outputs only, not " +
                                     device.to_string());
    }
    try {
      slot->tensor = ::torch::empty(shape, ::torch::TensorOptions().dtype(to_torch_dtype(dtype)));
    } catch (const std::exception& e) {
      return Status::Internal("allocating a torch tensor of " + shape_to_string(shape) + " " +
                              dtype_name(dtype) + " failed: " + e.what());
    }
    *out = chorus::Tensor(slot->tensor.data_ptr(), dtype, shape, device);
    return Status::OK();
  };
}

}  // namespace detail
}  // namespace torch
}  // namespace chorus
