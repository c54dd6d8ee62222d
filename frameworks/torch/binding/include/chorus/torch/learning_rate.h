// Learning-rate conventions of data-parallel training: the global batch is
// size() times the per-rank batch, so the learning rate scales with size(),
// reached gradually over a warm-up (Goyal et al., "Accurate, Large Minibatch
// SGD"; the convention Horovod users know). Not with Adasum
// (DistributedOptimizerOptions::op = kAdasum): as in Horovod, it keeps the
// single-process learning rate.
#pragma once

#include <cstdint>

#include <torch/optim/optimizer.h>

namespace chorus {
namespace torch {

// lr x chorus::size().
double scale_learning_rate(double lr);

// Sets the learning rate of every parameter group of `optimizer` (any of
// LibTorch's optimizers).
void set_learning_rate(::torch::optim::Optimizer& optimizer, double lr);
// The learning rate of the first parameter group.
double get_learning_rate(const ::torch::optim::Optimizer& optimizer);

// Linear warm-up from base_lr to base_lr x size() over the first
// `warmup_epochs` epochs, then constant at base_lr x size(). Call step() once
// per batch, before the optimizer's step.
class LearningRateWarmup {
 public:
  // base_lr: the single-process learning rate (finite, >= 0).
  // steps_per_epoch > 0, warmup_epochs >= 0 (0: no warm-up). `size` is the
  // number of ranks to scale to; chorus::size() when negative. Throws
  // chorus::Error otherwise. Does not touch the optimizer.
  LearningRateWarmup(::torch::optim::Optimizer& optimizer, double base_lr, double warmup_epochs,
                     int64_t steps_per_epoch, int size = -1);
  // Sets the optimizer's learning rate for the batch at the current position
  // and advances the position by one batch. The first step() sets base_lr:
  // at fractional epoch e = position / steps_per_epoch the rate is
  // base_lr x (1 + (size - 1) x e / warmup_epochs), and base_lr x size from
  // e = warmup_epochs on (Horovod's LearningRateWarmupCallback).
  void step();
  // Jumps to a position (e.g. after resuming from a checkpoint): the next
  // step() is for batch `batch_in_epoch` (0 <= it < steps_per_epoch) of
  // `epoch` (>= 0).
  void set_position(int64_t epoch, int64_t batch_in_epoch);
  // Batches since the start of training: the batch the next step() is for.
  int64_t position() const { return position_; }
  // The learning rate at the current position (what the next step() sets).
  double learning_rate() const;
  // The learning rate for any position.
  double learning_rate_at(int64_t position) const;

 private:
  ::torch::optim::Optimizer& optimizer_;
  double base_lr_;
  double warmup_epochs_;
  int64_t steps_per_epoch_;
  int size_;
  int64_t position_ = 0;  // batches since the start of training
};

}  // namespace torch
}  // namespace chorus
