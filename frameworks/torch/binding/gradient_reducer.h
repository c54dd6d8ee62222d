// GradientReducer: the per-step state of a DistributedOptimizer. It counts the
// backward passes of each parameter, starts a gradient's allreduce when its
// last pass has accumulated it (on autograd's thread), and at synchronize()
// waits for every allreduce and writes the results into .grad.
//
// One mutex guards everything: hooks run on autograd's thread(s), the rest on
// the caller's. synchronize() holds it while waiting, so a hook that fires
// meanwhile (a backward pass racing the optimizer, which is the caller's bug)
// waits instead of touching a gradient that is being reduced.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/chorus.h"
#include "chorus/torch/distributed_optimizer.h"

namespace chorus {
namespace torch {

struct ReducedParameter {
  std::string name;       // the collective's name, identical on every rank
  ::torch::Tensor param;  // a leaf that requires grad
};

class GradientReducer {
 public:
  // `options` are checked by the caller.
  GradientReducer(std::vector<ReducedParameter> parameters,
                  const DistributedOptimizerOptions& options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  const std::vector<ReducedParameter>& parameters() const { return parameters_; }

  // The hook of parameter `index`: one more backward pass has accumulated
  // into its .grad. Never throws; a failure is kept for synchronize().
  void gradient_ready(size_t index) noexcept;

  // Submits every parameter that has not been submitted this step (its .grad
  // as it is, zeros when it has none), waits for all, writes the results
  // into .grad and starts the next step. Throws the first error.
  void synchronize();

  // OK when no allreduce is in flight; otherwise an error naming `action`,
  // how many are in flight and one of them.
  Status check_idle(const std::string& action) const;

  int64_t allreduces_submitted() const;

 private:
  // One gradient on the wire. `grad` is the .grad that was reduced (held so
  // its memory outlives the collective even if the caller drops .grad);
  // `wire` is the memory the runtime reduces: `grad` itself, or a 16-bit
  // copy of it with compression.
  struct InFlight {
    Handle handle;
    ::torch::Tensor grad;
    ::torch::Tensor wire;
  };

  // Starts the allreduce of parameter `index`'s current .grad. Caller holds
  // mutex_.
  Status submit_locked(size_t index);
  // Waits for every allreduce in flight and writes results back; returns
  // the first error. Caller holds mutex_.
  Status finish_locked();
  ::torch::Tensor wire_buffer_locked(size_t index, const ::torch::Tensor& grad);

  const std::vector<ReducedParameter> parameters_;
  const Compression compression_;
  const int backward_passes_per_step_;
  const double gradient_predivide_factor_;
  const ReduceOp op_;
  const ProcessSet process_set_;

  mutable std::mutex mutex_;
  std::vector<int> passes_;                     // backward passes seen this step
  std::vector<bool> submitted_;                 // in flight this step, per parameter
  std::vector<InFlight> in_flight_;             // in submission order
  std::vector<::torch::Tensor> wire_buffers_;   // persistent 16-bit buffers
  Status first_error_;                          // from a hook, reported by synchronize()
  int64_t allreduces_submitted_ = 0;
};

}  // namespace torch
}  // namespace chorus
