// GradientHooks: a callback for each parameter, run the moment autograd has
// accumulated that parameter's gradient into .grad.
//
// The hook sits on the parameter's gradient accumulator (the AccumulateGrad
// node at the leaf of the graph) as a post-hook, so it runs after .grad has
// been written, as PyTorch's c10d Reducer and Horovod do. A hook on the
// gradient tensor itself (Tensor::register_hook) would run before
// accumulation, when .grad does not hold the sum yet.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

namespace torch {
namespace autograd {
struct Node;
}  // namespace autograd
}  // namespace torch

namespace chorus {
namespace torch {

class GradientHooks {
 public:
  // Called on autograd's thread with the index of the parameter whose
  // gradient is ready. Must not throw (autograd would abort the backward
  // pass half way, with some gradients submitted and others not).
  using Callback = std::function<void(size_t index)>;

  // Every parameter must be a leaf that requires grad (the caller checks).
  GradientHooks(const std::vector<::torch::Tensor>& parameters, Callback callback);
  // Removes the hooks, so that a backward pass after this object is gone
  // does not call into freed memory.
  ~GradientHooks();
  GradientHooks(const GradientHooks&) = delete;
  GradientHooks& operator=(const GradientHooks&) = delete;

 private:
  struct Registration {
    // Held so the accumulator, and the hook on it, outlive each backward
    // pass: autograd keeps only a weak reference between graphs, and a new
    // accumulator (without our hook) would be made for the next forward.
    std::shared_ptr<::torch::autograd::Node> accumulator;
    uintptr_t key = 0;
  };
  Callback callback_;
  std::vector<Registration> registrations_;
};

}  // namespace torch
}  // namespace chorus
