#include "cuda_ready_event.h"

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

}  // namespace detail
}  // namespace torch
}  // namespace chorus
