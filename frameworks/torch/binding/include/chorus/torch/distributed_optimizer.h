// DistributedOptimizer: data-parallel training for any LibTorch optimizer.
//
//   torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3 * chorus::size()));
//   chorus::torch::DistributedOptimizer optimizer(adam, model->named_parameters());
//   ...
//   optimizer.zero_grad();
//   loss.backward();        // each gradient's allreduce starts as soon as it is ready
//   optimizer.step();       // waits for them, then steps the wrapped optimizer
//
// A hook on each parameter's gradient accumulator starts the allreduce of that
// gradient the moment autograd has accumulated it, so communication overlaps
// the rest of backward. Collective names are "<prefix>.<parameter name>",
// identical on every rank.
//
// With op = ReduceOp::kAdasum (Horovod's Adasum optimizer) the learning rate
// is not scaled by size: the single-process one, e.g. AdamOptions(1e-3).
// step() runs the wrapped optimizer on the local gradients and combines the
// parameters' updates across the ranks with Adasum (docs/DESIGN.md, "Adasum").
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {

// How gradients travel: as they are, or cast to 16 bits before the
// collective and back after it (halves the bytes, costs precision).
enum class Compression { kNone, kFP16, kBF16 };
// "none", "fp16", "bf16"; parse_compression throws chorus::Error naming the
// bad value and the accepted ones.
const char* compression_name(Compression compression);
Compression parse_compression(const std::string& name);

struct DistributedOptimizerOptions {
  // kAverage (the default), kSum or kAdasum; other ops are refused.
  // kAdasum: nothing is reduced during backward; step() steps the wrapped
  // optimizer on this rank's gradients, combines each parameter's change by
  // Adasum across the process set and applies the result (the learning rate
  // stays the single-process one). CPU parameters, a set whose size is a
  // power of two; synchronize() has nothing to do, skip_synchronize() is
  // refused, backward_passes_per_step changes nothing (passes accumulate in
  // .grad until step()), and a failed step() leaves the parameters where
  // they started.
  ReduceOp op = ReduceOp::kAverage;
  Compression compression = Compression::kNone;
  // Local backward passes summed into .grad before one allreduce (gradient
  // accumulation). The allreduce fires during the last pass.
  int backward_passes_per_step = 1;
  // With kAverage: gradients are divided by this before the sum and by
  // size / factor after it (Horovod's gradient_predivide_factor).
  double gradient_predivide_factor = 1.0;
  // Collective names are "<name_prefix>.<parameter name>".
  std::string name_prefix = "grad";
  // The ranks that reduce the gradients (every member of the set must build
  // an optimizer for it; kAverage divides by the set's size): e.g. the
  // data-parallel set of a pipeline-parallel layout. This rank must be a
  // member.
  ProcessSet process_set;
};

using NamedParameters = ::torch::OrderedDict<std::string, ::torch::Tensor>;

class DistributedOptimizer {
 public:
  // `optimizer` must outlive this object. `parameters` are the model's named
  // parameters (module->named_parameters()); every parameter the optimizer
  // updates must be among them. Throws chorus::Error for LBFGS, duplicate
  // names, a parameter the optimizer updates that has no name, a parameter
  // the torch ops would refuse (a dtype or a device this build does not
  // support; same message as theirs, naming "<prefix>.<parameter name>"), or
  // bad options. Needs chorus::init(). Parameters that do not require grad
  // are left alone, and so are named parameters the optimizer does not
  // update; a tensor listed under two names (tied weights) is reduced once,
  // under its first name.
  DistributedOptimizer(::torch::optim::Optimizer& optimizer, const NamedParameters& parameters,
                       DistributedOptimizerOptions options = {});
  // Same, with an explicit list of (name, parameter) pairs.
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       const std::vector<std::pair<std::string, ::torch::Tensor>>& parameters,
                       DistributedOptimizerOptions options = {});
  // Same, for a braced list: DistributedOptimizer(sgd, {{"w", w}, {"b", b}})
  // (which would otherwise be ambiguous between the two forms above).
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       std::initializer_list<std::pair<std::string, ::torch::Tensor>> parameters,
                       DistributedOptimizerOptions options = {});
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Waits for every gradient allreduce of this step and writes the results
  // into .grad. Parameters whose hook did not fire this step are submitted
  // with their .grad as it is (zeros after zero_grad(); zeros are created
  // when there is none), so every rank submits the same names. Throws
  // chorus::Error with the runtime's message when a collective failed, or
  // when a gradient was computed again while its allreduce was in flight
  // (more backward passes than backward_passes_per_step). A gradient the
  // torch ops would refuse (e.g. one on a device this build does not
  // support) is refused with their message before anything is done with it;
  // the other gradients are still reduced, so ranks stay paired.
  void synchronize();
  // synchronize() (unless inside a SkipSynchronize scope), then the wrapped
  // optimizer's step(). Inside a SkipSynchronize scope, refused
  // (chorus::Error) while allreduces are in flight.
  void step();
  // Zeroes the gradients; refused (chorus::Error) while allreduces are in
  // flight, since the runtime may still be writing them.
  void zero_grad();

  // While alive, step() does not synchronize. For gradient clipping:
  //   optimizer.synchronize();
  //   torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
  //   { auto skip = optimizer.skip_synchronize(); optimizer.step(); }
  // With op kAdasum it throws chorus::Error (gradients are never reduced).
  class SkipSynchronize {
   public:
    explicit SkipSynchronize(DistributedOptimizer& owner);
    ~SkipSynchronize();
    SkipSynchronize(const SkipSynchronize&) = delete;
    SkipSynchronize& operator=(const SkipSynchronize&) = delete;

   private:
    DistributedOptimizer& owner_;
  };
  SkipSynchronize skip_synchronize() { return SkipSynchronize(*this); }

  ::torch::optim::Optimizer& optimizer() { return optimizer_; }
  const DistributedOptimizerOptions& options() const { return options_; }
  // Number of gradient allreduces submitted since construction (for tests
  // and diagnostics: clipping must not allreduce twice).
  int64_t allreduces_submitted() const;

 private:
  struct State;
  ::torch::optim::Optimizer& optimizer_;
  DistributedOptimizerOptions options_;
  std::unique_ptr<State> state_;
  bool skip_synchronize_ = false;
};

}  // namespace torch
}  // namespace chorus
