#include "tensor_adapter.h"

#include <exception>
#include <sstream>
#include <utility>

#include <ATen/MemoryOverlap.h>

#include "chorus/torch/ops.h"
#include "cuda_streams.h"

namespace chorus {
namespace torch {
namespace detail {

Status unsupported_device(const std::string& name, const std::string& device) {
  // The core's own check says "no backend in this build supports tensors on
  // <device>" too, so the phrase is the same at every layer.
  return Status::InvalidArgument("tensor '" + name + "' is on device " + device +
                                 ": no backend in this build supports tensors on " + device);
}

Device to_chorus_device(const c10::Device& device, const std::string& name) {
  switch (device.type()) {
    case c10::DeviceType::CPU: return Device::cpu();
    case c10::DeviceType::CUDA: return Device::cuda(device.index());
    default: break;
  }
  throw Error(unsupported_device(name, device.str()));
}

c10::Device to_torch_device(const Device& device) {
  switch (device.kind) {
    case Device::Kind::kCPU: return c10::Device(c10::DeviceType::CPU);
    case Device::Kind::kCUDA:
      return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device.index));
    case Device::Kind::kCustom:
      break;  // a program's own device, which LibTorch does not know
  }
  throw Error(Status::InvalidArgument("LibTorch has no device for chorus device " + device.to_string()));
}

void check_device(const ::torch::Tensor& tensor, const std::string& name) {
  // Asked here rather than left to the core's own check: callers allocate
  // outputs, gradients and wire buffers on this device, copy into it, or
  // submit other tensors first, all before the core would see this one.
  // Devices Chorus has a kind for (the CPU, CUDA) get the runtime's own
  // refusal, which says why a CUDA tensor has no backend on this rank.
  const Device device = to_chorus_device(tensor.device(), name);
  const Status refusal = chorus::check_device(name, device);
  if (!refusal.ok()) throw Error(refusal);
}

void check_usable(const ::torch::Tensor& tensor, const std::string& name) {
  if (!tensor.defined()) {
    throw Error(Status::InvalidArgument("tensor '" + name +
                                        "' is undefined; expected a defined tensor"));
  }
  check_device(tensor, name);
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
  return empty_like_contiguous(tensor, tensor.scalar_type());
}

::torch::Tensor empty_like_contiguous(const ::torch::Tensor& tensor, c10::ScalarType dtype) {
  return ::torch::empty(tensor.sizes(),
                        ::torch::TensorOptions().dtype(dtype).device(tensor.device()));
}

chorus::Tensor view_of(const ::torch::Tensor& contiguous_tensor, const std::string& name) {
  const ::torch::Tensor& t = contiguous_tensor;
  chorus::Tensor view(t.data_ptr(), to_chorus_dtype(t.scalar_type(), name), Shape(t.sizes().begin(), t.sizes().end()),
                      to_chorus_device(t.device(), name));
  view.ready = ready_event(t);
  return view;
}

OutputAllocator torch_allocator(std::shared_ptr<AllocatedOutput> slot) {
  return [slot = std::move(slot)](const Shape& shape, DataType dtype, Device device,
                                  chorus::Tensor* out) -> Status {
    try {
      slot->tensor = ::torch::empty(shape, ::torch::TensorOptions()
                                               .dtype(to_torch_dtype(dtype))
                                               .device(to_torch_device(device)));
    } catch (const std::exception& e) {
      return Status::Internal("allocating a torch tensor of " + shape_to_string(shape) + " " +
                              dtype_name(dtype) + " on " + device.to_string() + " failed: " +
                              e.what());
    }
    *out = chorus::Tensor(slot->tensor.data_ptr(), dtype, shape, device);
    return Status::OK();
  };
}

}  // namespace detail
}  // namespace torch
}  // namespace chorus
