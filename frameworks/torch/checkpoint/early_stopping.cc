#include "chorus/torch/checkpoint/early_stopping.h"

#include <cmath>
#include <limits>

#include "chorus/chorus.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/state_broadcast.h"

namespace chorus {
namespace torch {
namespace {

[[noreturn]] void invalid_early_stopping(const std::string& message) {
  throw Error(Status::InvalidArgument("EarlyStopping: " + message));
}

}  // namespace

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  if (options_.patience < 0) {
    invalid_early_stopping("patience=" + std::to_string(options_.patience) + " is invalid; expected >= 0 (0: never stop)");
  }
  if (!(options_.min_delta >= 0) || std::isinf(options_.min_delta)) {
    invalid_early_stopping("min_delta=" + std::to_string(options_.min_delta) + " is invalid; expected a finite number >= 0");
  }
  if (options_.agreement == EarlyStoppingOptions::Agreement::kRootValue &&
      (options_.root_rank < 0 || options_.root_rank >= chorus::size())) {
    invalid_early_stopping("root_rank=" + std::to_string(options_.root_rank) + " is invalid; expected a rank in [0, " +
         std::to_string(chorus::size()) + ")");
  }
  state_.best = worst_metric(options_.mode);
  state_.last = std::numeric_limits<double>::quiet_NaN();
}

bool EarlyStopping::update(double metric) {
  const std::string name = options_.name + "." + std::to_string(state_.updates);
  double agreed = metric;
  if (options_.agreement == EarlyStoppingOptions::Agreement::kRootValue) {
    agreed = broadcast_scalar(metric, options_.root_rank, name, options_.process_set);
  } else {
    // The runtime hands every member the same bytes of the average.
    ::torch::Tensor value = ::torch::full({1}, metric, ::torch::TensorOptions().dtype(::torch::kFloat64));
    AllreduceOptions reduce;
    reduce.op = ReduceOp::kAverage;
    reduce.process_set = options_.process_set;
    allreduce_(value, name, reduce);
    agreed = value.item<double>();
  }
  ++state_.updates;
  state_.last = agreed;
  improved_ = improves(options_.mode, agreed, state_.best, options_.min_delta);
  if (improved_) {
    state_.best = agreed;
    state_.best_update = state_.updates;
    state_.updates_without_improvement = 0;
  } else {
    ++state_.updates_without_improvement;
  }
  return should_stop();
}

bool EarlyStopping::should_stop() const {
  return options_.patience > 0 && state_.updates_without_improvement >= options_.patience;
}

void EarlyStopping::load_state(const EarlyStoppingState& state) {
  if (state.updates < 0 || state.best_update < 0 || state.best_update > state.updates ||
      state.updates_without_improvement < 0 || state.updates_without_improvement > state.updates) {
    invalid_early_stopping("state (updates " + std::to_string(state.updates) + ", best_update " +
         std::to_string(state.best_update) + ", updates_without_improvement " +
         std::to_string(state.updates_without_improvement) +
         ") is inconsistent; expected 0 <= best_update, updates_without_improvement <= updates");
  }
  state_ = state;
  improved_ = false;
}

void EarlyStopping::save(CheckpointExtras& extras, const std::string& prefix) const {
  extras.set_int(prefix + ".updates", state_.updates);
  extras.set_double(prefix + ".best", state_.best);
  extras.set_int(prefix + ".best_update", state_.best_update);
  extras.set_int(prefix + ".updates_without_improvement", state_.updates_without_improvement);
  extras.set_double(prefix + ".last", state_.last);
}

void EarlyStopping::load(const CheckpointExtras& extras, const std::string& prefix) {
  if (!extras.contains(prefix + ".updates")) return;
  EarlyStoppingState state;
  state.updates = extras.get_int(prefix + ".updates");
  state.best = extras.get_double(prefix + ".best");
  state.best_update = extras.get_int(prefix + ".best_update");
  state.updates_without_improvement = extras.get_int(prefix + ".updates_without_improvement");
  state.last = extras.get_double(prefix + ".last");
  load_state(state);
}

}  // namespace torch
}  // namespace chorus
