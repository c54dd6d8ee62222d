// GradScaler: dynamic loss scaling for mixed-precision training, as
// PyTorch's torch.cuda.amp.GradScaler, agreed by every rank.
//
//   chorus::torch::GradScaler scaler;               // scale 2^16
//   optimizer.zero_grad();
//   scaler.scale(loss).backward();                  // gradients x scale
//   scaler.step(optimizer);                         // unscale; step unless inf/NaN
//   scaler.update();                                // back off or grow the scale
//
// With a DistributedOptimizer the decision is taken on the averaged
// gradients: step()/unscale_() first wait for the gradient allreduces, and a
// non-finite value on any rank makes the sum non-finite on every rank (inf
// plus anything finite is inf, inf - inf and NaN + anything are NaN, in any
// order of summation), while the runtime hands every rank the same bytes.
// So the found-inf flag travels inside the gradient allreduce itself: no
// extra collective, and every rank skips the same steps. With a plain
// optimizer (gradients that are this rank's own) unscale_() checks the
// local gradients and agrees with one allreduce (max) of a 1-element flag;
// so does a DistributedOptimizer with op kAdasum, whose gradients stay local
// (the flag's allreduce runs over its process set).
//
// Gradient clipping: scaler.unscale_(optimizer); clip; scaler.step(optimizer)
// (step() sees that the gradients are unscaled already and steps without a
// second allreduce).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include "chorus/torch/distributed_optimizer.h"

namespace chorus {
namespace torch {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1)
  int64_t growth_interval = 2000;  // consecutive finite steps before growing, >= 1
  // Disabled: scale() returns the loss, step() just steps, update() does nothing.
  bool enabled = true;
  // The collective name of the found-inf flag (plain optimizers, and
  // DistributedOptimizer with op kAdasum).
  std::string name = "grad_scaler";
};

// What a checkpoint keeps (PyTorch's state_dict: scale, growth tracker and
// the factors).
struct GradScalerState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // consecutive finite steps since the last change
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  // Throws chorus::Error naming a bad option and what is expected.
  explicit GradScaler(GradScalerOptions options = {});

  // loss x scale (loss itself when disabled). Refused (chorus::Error) for a
  // tensor that is not floating point.
  ::torch::Tensor scale(const ::torch::Tensor& loss) const;

  // Divides the optimizer's gradients by the scale and records whether any
  // is inf or NaN on any rank. Once per optimizer between update()s
  // (chorus::Error otherwise). The DistributedOptimizer form synchronizes
  // first (waits for the averaged gradients).
  void unscale_(DistributedOptimizer& optimizer);
  void unscale_(::torch::optim::Optimizer& optimizer);

  // Unscales (unless unscale_ was called) and steps the optimizer unless a
  // non-finite gradient was found; returns whether it stepped. Once per
  // optimizer between update()s.
  bool step(DistributedOptimizer& optimizer);
  bool step(::torch::optim::Optimizer& optimizer);

  // After the step(s) of an iteration: scale x backoff_factor when any
  // optimizer found inf/NaN (and the growth tracker restarts), else after
  // growth_interval consecutive finite steps scale x growth_factor. Every
  // rank updates identically, since the decisions were agreed.
  void update();
  // Sets the scale explicitly (as PyTorch's update(new_scale)); > 0, finite.
  void update(double new_scale);

  double get_scale() const { return enabled_ ? state_.scale : 1.0; }
  bool is_enabled() const { return enabled_; }
  // Whether the last step() of this iteration found inf/NaN (until update()).
  bool found_inf() const { return found_inf_any_; }
  // Steps skipped since construction (for logs and run summaries).
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t growth_tracker() const { return state_.growth_tracker; }

  GradScalerState state() const { return state_; }
  // Refuses (chorus::Error) a state with an invalid scale or factors.
  void load_state(const GradScalerState& state);
  void save(::torch::serialize::OutputArchive& archive) const;
  void load(::torch::serialize::InputArchive& archive);

 private:
  enum class Stage { kReady, kUnscaled, kStepped };
  struct PerOptimizer {
    Stage stage = Stage::kReady;
    bool found_inf = false;
  };
  PerOptimizer& entry(const void* optimizer, const char* what);
  // Multiplies every gradient by 1/scale; true when any is non-finite here.
  bool unscale_local(::torch::optim::Optimizer& optimizer) const;
  bool step_after_unscale(PerOptimizer& entry, const std::function<void()>& do_step);

  GradScalerState state_;
  bool enabled_;
  std::string name_;
  std::unordered_map<const void*, PerOptimizer> optimizers_;
  bool found_inf_any_ = false;
  int64_t skipped_steps_ = 0;
};

}  // namespace torch
}  // namespace chorus
