#include "gradient_hooks.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <utility>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

class AccumulatedHook : public ::torch::autograd::FunctionPostHook {
 public:
  AccumulatedHook(const GradientHooks::Callback* callback, size_t index)
      : callback_(callback), index_(index) {}

  ::torch::autograd::variable_list operator()(
      const ::torch::autograd::variable_list& outputs,
      const ::torch::autograd::variable_list& /*inputs*/) override {
    (*callback_)(index_);
    return outputs;
  }

 private:
  // Owned by GradientHooks, which removes this hook before it goes away.
  const GradientHooks::Callback* callback_;
  size_t index_;
};

}  // namespace

GradientHooks::GradientHooks(const std::vector<::torch::Tensor>& parameters, Callback callback)
    : callback_(std::move(callback)) {
  registrations_.reserve(parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    std::shared_ptr<::torch::autograd::Node> accumulator =
        ::torch::autograd::impl::grad_accumulator(parameters[i]);
    if (accumulator == nullptr) {
      // The caller admits only leaves that require grad, which always have one.
      for (auto& done : registrations_) done.accumulator->del_post_hook(done.key);
      throw Error(Status::Internal("parameter " + std::to_string(i) +
                                   " has no gradient accumulator; expected a leaf tensor that "
                                   "requires grad"));
    }
    const uintptr_t key =
        accumulator->add_post_hook(std::make_unique<AccumulatedHook>(&callback_, i));
    registrations_.push_back({std::move(accumulator), key});
  }
}

GradientHooks::~GradientHooks() {
  for (auto& registration : registrations_) {
    registration.accumulator->del_post_hook(registration.key);
  }
}

}  // namespace torch
}  // namespace chorus
