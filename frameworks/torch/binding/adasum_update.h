// AdasumUpdate: the step() of a DistributedOptimizer with op kAdasum, as
// Horovod's Adasum optimizer (horovod/torch/optimizer.py,
// _DistributedAdasumOptimizer) does it: Adasum combines what the optimizer
// would do to the parameters, not the gradients (for Adam and the like the
// update is not linear in the gradient). Each rank steps the wrapped
// optimizer on its own gradients, the parameters' changes (deltas) are
// combined by one Adasum allreduce per parameter, fused by the runtime, and
// every rank sets each parameter to where it started plus the combined
// delta. The gradients stay local: nothing is reduced during backward, so
// the learning rate is that of a single process (Horovod's rule: not scaled
// by size).
//
// On a set of one rank Adasum is the identity: step() is the wrapped
// optimizer's alone, as Horovod's optimizer is at size 1.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/optim/optimizer.h>

#include "chorus/torch/distributed_optimizer.h"
#include "gradient_reducer.h"

namespace chorus {
namespace torch {

class AdasumUpdate {
 public:
  // `options` are checked by the caller (op kAdasum, a power-of-two set).
  AdasumUpdate(std::vector<ReducedParameter> parameters, const DistributedOptimizerOptions& options);

  const std::vector<ReducedParameter>& parameters() const { return parameters_; }
  // The wrapped optimizer's step on the local gradients, then the deltas'
  // Adasum across the set. Throws chorus::Error with the runtime's message
  // when a collective failed (every parameter's is still waited for).
  void step(::torch::optim::Optimizer& optimizer);
  int64_t allreduces_submitted() const { return allreduces_submitted_; }

 private:
  const std::vector<ReducedParameter> parameters_;
  const Compression compression_;
  const ProcessSet process_set_;
  // Per parameter, allocated once: where it started this step, and the
  // delta as it travels (16-bit with compression).
  std::vector<::torch::Tensor> starts_;
  std::vector<::torch::Tensor> deltas_;
  int64_t allreduces_submitted_ = 0;
};

}  // namespace torch
}  // namespace chorus
