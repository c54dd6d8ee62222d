#include "cuda_streams.h"

#ifdef CHORUS_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "chorus/cuda.h"
#endif

namespace chorus {
namespace torch {
namespace detail {

std::shared_ptr<const Event> ready_event(const ::torch::Tensor& tensor) {
#ifdef CHORUS_TORCH_CUDA
  if (tensor.is_cuda()) {
    return chorus::cuda_event_on(c10::cuda::getCurrentCUDAStream(tensor.device().index()).stream());
  }
#else
  (void)tensor;
#endif
  return nullptr;
}

bool await_result(const chorus::Handle& handle, const ::torch::Tensor& on_device,
                  const std::function<std::vector<::torch::Tensor>()>& in_use) {
#ifdef CHORUS_TORCH_CUDA
  if (on_device.defined() && on_device.is_cuda()) {
    const c10::cuda::CUDAStream consumer =
        c10::cuda::getCurrentCUDAStream(on_device.device().index());
    chorus::cuda_stream_wait(consumer.stream(), handle.completion_event());
    for (const ::torch::Tensor& tensor : in_use()) {
      if (tensor.defined() && tensor.is_cuda()) tensor.record_stream(consumer.unwrap());
    }
    return true;
  }
#else
  (void)on_device;
  (void)in_use;
#endif
  handle.wait();
  return false;
}

}  // namespace detail
}  // namespace torch
}  // namespace chorus
