// GradScaler: loss scaling, unscaling with a non-finite check, and the
// growth/backoff rule of torch.cuda.amp.GradScaler (see grad_scaler.h for
// how the ranks agree).
#include "chorus/torch/grad_scaler.h"

#include <cmath>
#include <functional>

#include <torch/torch.h>

#include "chorus/torch/state_broadcast.h"

namespace chorus {
namespace torch {
namespace {

Status invalid_scaler_option(const std::string& message) { return Status::InvalidArgument("GradScaler: " + message); }

void check_state(const GradScalerState& s) {
  if (!std::isfinite(s.scale) || s.scale <= 0) {
    throw Error(invalid_scaler_option("scale=" + std::to_string(s.scale) + " is invalid; expected a finite number > 0"));
  }
  if (!std::isfinite(s.growth_factor) || s.growth_factor <= 1.0) {
    throw Error(invalid_scaler_option("growth_factor=" + std::to_string(s.growth_factor) +
                        " is invalid; expected a finite number > 1"));
  }
  if (!(s.backoff_factor > 0.0 && s.backoff_factor < 1.0)) {
    throw Error(invalid_scaler_option("backoff_factor=" + std::to_string(s.backoff_factor) +
                        " is invalid; expected a number in (0, 1)"));
  }
  if (s.growth_interval < 1) {
    throw Error(invalid_scaler_option("growth_interval=" + std::to_string(s.growth_interval) +
                        " is invalid; expected an integer >= 1"));
  }
  if (s.growth_tracker < 0 || s.growth_tracker >= s.growth_interval) {
    throw Error(invalid_scaler_option("growth_tracker=" + std::to_string(s.growth_tracker) +
                        " is invalid; expected an integer from 0 to growth_interval - 1"));
  }
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : enabled_(options.enabled), name_(std::move(options.name)) {
  state_.scale = options.init_scale;
  state_.growth_factor = options.growth_factor;
  state_.backoff_factor = options.backoff_factor;
  state_.growth_interval = options.growth_interval;
  check_state(state_);
  if (name_.empty()) throw Error(invalid_scaler_option("name is empty; expected a collective name"));
}

::torch::Tensor GradScaler::scale(const ::torch::Tensor& loss) const {
  if (!loss.defined() || !loss.is_floating_point()) {
    throw Error(invalid_scaler_option("scale() needs a defined floating-point loss tensor"));
  }
  if (!enabled_) return loss;
  return loss * state_.scale;
}

GradScaler::PerOptimizer& GradScaler::entry(const void* optimizer, const char* what) {
  PerOptimizer& e = optimizers_[optimizer];
  if (e.stage == Stage::kStepped) {
    throw Error(invalid_scaler_option(std::string(what) +
                        " after step() for this optimizer in the same iteration; expected "
                        "update() between iterations"));
  }
  return e;
}

bool GradScaler::unscale_local(::torch::optim::Optimizer& optimizer) const {
  ::torch::NoGradGuard no_grad;
  // As PyTorch: the reciprocal in double, applied in the gradient's dtype.
  const double inv_scale = 1.0 / state_.scale;
  bool non_finite = false;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& param : group.params()) {
      ::torch::Tensor grad = param.grad();
      if (!grad.defined()) continue;
      grad.mul_(inv_scale);
      // inf x inv_scale stays inf and NaN stays NaN, so checking after the
      // multiplication also catches a finite gradient that overflowed.
      if (!non_finite && !grad.isfinite().all().item<bool>()) non_finite = true;
    }
  }
  return non_finite;
}

void GradScaler::unscale_(DistributedOptimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& e = entry(&optimizer.optimizer(), "unscale_()");
  if (e.stage == Stage::kUnscaled) {
    throw Error(invalid_scaler_option("unscale_() was already called for this optimizer since the last update()"));
  }
  if (optimizer.options().op == ReduceOp::kAdasum) {
    // Adasum leaves the gradients local (its step() combines the updates):
    // one allreduce of the flag among the optimizer's ranks.
    const bool mine = unscale_local(optimizer.optimizer());
    double flag = mine ? 1.0 : 0.0;
    AllreduceOptions any;
    any.op = ReduceOp::kMax;
    any.process_set = optimizer.options().process_set;
    chorus::allreduce(name_ + ".found_inf", Tensor(&flag, DataType::kFloat64, {1}), any);
    e.found_inf = flag > 0.0;
    e.stage = Stage::kUnscaled;
    return;
  }
  // The averaged gradients are the same bytes on every rank, and a
  // non-finite gradient on any rank made them non-finite: the local check
  // is already the agreed one.
  optimizer.synchronize();
  e.found_inf = unscale_local(optimizer.optimizer());
  e.stage = Stage::kUnscaled;
}

void GradScaler::unscale_(::torch::optim::Optimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& e = entry(&optimizer, "unscale_()");
  if (e.stage == Stage::kUnscaled) {
    throw Error(invalid_scaler_option("unscale_() was already called for this optimizer since the last update()"));
  }
  const bool mine = unscale_local(optimizer);
  // These gradients are this rank's own: one allreduce of the flag.
  e.found_inf = allreduce_metric(mine ? 1.0 : 0.0, name_ + ".found_inf", ReduceOp::kMax) > 0.0;
  e.stage = Stage::kUnscaled;
}

bool GradScaler::step_after_unscale(PerOptimizer& e, const std::function<void()>& do_step) {
  e.stage = Stage::kStepped;
  if (e.found_inf) {
    found_inf_any_ = true;
    ++skipped_steps_;
    return false;
  }
  do_step();
  return true;
}

bool GradScaler::step(DistributedOptimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  PerOptimizer& e = entry(&optimizer.optimizer(), "step()");
  if (e.stage == Stage::kReady) unscale_(optimizer);
  // Synchronized by unscale_ (here or by the caller, who may have clipped
  // since): step the wrapped optimizer without a second allreduce.
  return step_after_unscale(e, [&] {
    if (optimizer.options().op == ReduceOp::kAdasum) {
      optimizer.step();  // no gradient allreduce to skip
      return;
    }
    auto skip = optimizer.skip_synchronize();
    optimizer.step();
  });
}

bool GradScaler::step(::torch::optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  PerOptimizer& e = entry(&optimizer, "step()");
  if (e.stage == Stage::kReady) unscale_(optimizer);
  return step_after_unscale(e, [&] { optimizer.step(); });
}

void GradScaler::update() {
  if (!enabled_) return;
  // As torch._amp_update_scale_.
  if (found_inf_any_) {
    state_.scale *= state_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == state_.growth_interval) {
    state_.scale *= state_.growth_factor;
    state_.growth_tracker = 0;
  }
  optimizers_.clear();
  found_inf_any_ = false;
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  if (!std::isfinite(new_scale) || new_scale <= 0) {
    throw Error(invalid_scaler_option("update(" + std::to_string(new_scale) + ") is invalid; expected a finite scale > 0"));
  }
  state_.scale = new_scale;
  optimizers_.clear();
  found_inf_any_ = false;
}

void GradScaler::load_state(const GradScalerState& state) {
  check_state(state);
  state_ = state;
}

void GradScaler::save(::torch::serialize::OutputArchive& archive) const {
  archive.write("scale", ::torch::tensor(state_.scale, ::torch::kFloat64));
  archive.write("growth_tracker", ::torch::tensor(state_.growth_tracker, ::torch::kInt64));
  archive.write("growth_factor", ::torch::tensor(state_.growth_factor, ::torch::kFloat64));
  archive.write("backoff_factor", ::torch::tensor(state_.backoff_factor, ::torch::kFloat64));
  archive.write("growth_interval", ::torch::tensor(state_.growth_interval, ::torch::kInt64));
}

void GradScaler::load(::torch::serialize::InputArchive& archive) {
  const auto read = [&](const char* key) {
    ::torch::Tensor value;
    if (!archive.try_read(key, value) || value.numel() != 1) {
      throw Error(invalid_scaler_option(std::string("the archive has no scalar '") + key +
                          "'; expected one written by GradScaler::save"));
    }
    return value;
  };
  GradScalerState state;
  state.scale = read("scale").item<double>();
  state.growth_tracker = read("growth_tracker").item<int64_t>();
  state.growth_factor = read("growth_factor").item<double>();
  state.backoff_factor = read("backoff_factor").item<double>();
  state.growth_interval = read("growth_interval").item<int64_t>();
  load_state(state);
}

}  // namespace torch
}  // namespace chorus
