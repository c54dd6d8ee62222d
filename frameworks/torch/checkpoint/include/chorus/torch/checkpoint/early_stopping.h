// Early stopping that every rank agrees on (Keras' EarlyStopping): stop once
// the monitored metric has not improved by more than min_delta for
// `patience` consecutive updates.
//
// The rule that makes ranks agree: update() is a collective that first turns
// the ranks' metrics into one value that every rank holds bit for bit --
// their average (Agreement::kRankAverage, the default: one allreduce) or
// root_rank's (Agreement::kRootValue: one broadcast, for a metric that is
// already the same everywhere, e.g. an allreduced test loss, which an
// average could change in the last bit) -- and every rank then runs the same
// comparison on the same value. So every rank stops after the same update,
// even when each rank's own metric is different.
//
//   chorus::torch::EarlyStopping stopper({/*patience=*/3});
//   for (epoch...) { ...; if (stopper.update(validation_loss)) break; }
#pragma once

#include <cstdint>
#include <string>

#include "chorus/process_set.h"
#include "chorus/torch/checkpoint/checkpoint_extras.h"
#include "chorus/torch/checkpoint/metric_mode.h"

namespace chorus {
namespace torch {

struct EarlyStoppingOptions {
  // Updates without improvement before stopping, >= 0; 0: never stops (the
  // best metric is still tracked).
  int64_t patience = 0;
  double min_delta = 0;  // >= 0; an improvement must exceed it
  MetricMode mode = MetricMode::kMin;
  enum class Agreement { kRankAverage, kRootValue };
  Agreement agreement = Agreement::kRankAverage;
  int root_rank = 0;  // kRootValue's source (a job rank in the process set)
  ProcessSet process_set;  // the ranks that agree
  std::string name = "early_stopping";  // collective names' prefix
};

// What a checkpoint keeps so a resumed run continues the count.
struct EarlyStoppingState {
  int64_t updates = 0;                // update() calls so far
  double best = 0;                    // the best agreed metric (worst_metric before any)
  int64_t best_update = 0;            // 1-based update of the best; 0: none yet
  int64_t updates_without_improvement = 0;
  double last = 0;                    // the last agreed metric (NaN before any)
};

class EarlyStopping {
 public:
  // Throws chorus::Error naming a bad option.
  explicit EarlyStopping(EarlyStoppingOptions options);

  // Collective over the process set (every member calls it with its own
  // metric, in the same order). Agrees on the metric, updates the count and
  // returns should_stop(). Identical on every rank.
  bool update(double metric);
  bool should_stop() const;
  // Whether the last update() improved on the best (a new best).
  bool improved() const { return improved_; }

  double best() const { return state_.best; }
  int64_t best_update() const { return state_.best_update; }
  double last() const { return state_.last; }
  int64_t updates() const { return state_.updates; }
  int64_t updates_without_improvement() const { return state_.updates_without_improvement; }
  const EarlyStoppingOptions& options() const { return options_; }

  EarlyStoppingState state() const { return state_; }
  void load_state(const EarlyStoppingState& state);
  // Into / from a checkpoint's extras, under "<prefix>.updates", ...
  void save(CheckpointExtras& extras, const std::string& prefix = "early_stopping") const;
  // Leaves the state as it is when the extras have none (a fresh run).
  void load(const CheckpointExtras& extras, const std::string& prefix = "early_stopping");

 private:
  EarlyStoppingOptions options_;
  EarlyStoppingState state_;
  bool improved_ = false;
};

}  // namespace torch
}  // namespace chorus
