// Learning-rate scaling and warm-up for data-parallel training.
#include "chorus/torch/learning_rate.h"

#include <cmath>
#include <string>

#include <c10/util/Exception.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {
namespace {

// OptimizerOptions' get_lr/set_lr throw c10::Error for an optimizer class
// that does not override them (a user-defined one).
template <typename Call>
auto lr_call(const char* what, Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const c10::Error& e) {
    throw Error(Status::InvalidArgument(std::string(what) + ": " + e.what_without_backtrace() +
                                        "; expected an optimizer whose options have a learning "
                                        "rate (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS)"));
  }
}

void check_has_groups(const ::torch::optim::Optimizer& optimizer, const char* what) {
  if (optimizer.param_groups().empty()) {
    throw Error(Status::InvalidArgument(std::string(what) +
                                        ": the optimizer has no parameter groups; expected at "
                                        "least one"));
  }
}

}  // namespace

double scale_learning_rate(double lr) { return lr * chorus::size(); }

void set_learning_rate(::torch::optim::Optimizer& optimizer, double lr) {
  if (!std::isfinite(lr) || lr < 0) {
    throw Error(Status::InvalidArgument("set_learning_rate: learning rate " + std::to_string(lr) +
                                        " is invalid; expected a finite value >= 0"));
  }
  check_has_groups(optimizer, "set_learning_rate");
  for (auto& group : optimizer.param_groups()) {
    lr_call("set_learning_rate", [&] { group.options().set_lr(lr); });
  }
}

double get_learning_rate(const ::torch::optim::Optimizer& optimizer) {
  check_has_groups(optimizer, "get_learning_rate");
  return lr_call("get_learning_rate",
                 [&] { return optimizer.param_groups().front().options().get_lr(); });
}

LearningRateWarmup::LearningRateWarmup(::torch::optim::Optimizer& optimizer, double base_lr,
                                       double warmup_epochs, int64_t steps_per_epoch, int size)
    : optimizer_(optimizer),
      base_lr_(base_lr),
      warmup_epochs_(warmup_epochs),
      steps_per_epoch_(steps_per_epoch),
      size_(size < 0 ? chorus::size() : size) {
  const std::string what = "LearningRateWarmup: ";
  if (!std::isfinite(base_lr) || base_lr < 0) {
    throw Error(Status::InvalidArgument(what + "base_lr " + std::to_string(base_lr) +
                                        " is invalid; expected a finite value >= 0"));
  }
  if (!std::isfinite(warmup_epochs) || warmup_epochs < 0) {
    throw Error(Status::InvalidArgument(what + "warmup_epochs " + std::to_string(warmup_epochs) +
                                        " is invalid; expected a finite value >= 0"));
  }
  if (steps_per_epoch <= 0) {
    throw Error(Status::InvalidArgument(what + "steps_per_epoch " +
                                        std::to_string(steps_per_epoch) +
                                        " is invalid; expected a value > 0"));
  }
  if (size_ == 0) {
    throw Error(Status::InvalidArgument(what + "size 0 is invalid; expected a number of ranks > 0"));
  }
}

void LearningRateWarmup::step() {
  set_learning_rate(optimizer_, learning_rate_at(position_));
  ++position_;
}

void LearningRateWarmup::set_position(int64_t epoch, int64_t batch_in_epoch) {
  if (epoch < 0 || batch_in_epoch < 0 || batch_in_epoch >= steps_per_epoch_) {
    throw Error(Status::InvalidArgument(
        "LearningRateWarmup::set_position: epoch " + std::to_string(epoch) + ", batch " +
        std::to_string(batch_in_epoch) + " is invalid; expected epoch >= 0 and batch in [0, " +
        std::to_string(steps_per_epoch_) + ")"));
  }
  position_ = epoch * steps_per_epoch_ + batch_in_epoch;
}

double LearningRateWarmup::learning_rate() const { return learning_rate_at(position_); }

double LearningRateWarmup::learning_rate_at(int64_t position) const {
  const double full = base_lr_ * size_;
  const double epoch = static_cast<double>(position) / static_cast<double>(steps_per_epoch_);
  if (warmup_epochs_ == 0 || epoch >= warmup_epochs_) return full;
  return base_lr_ * (1.0 + (size_ - 1) * epoch / warmup_epochs_);
}

}  // namespace torch
}  // namespace chorus
