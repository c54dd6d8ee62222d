// ASHA, asynchronous successive halving (Li, Jamieson, Rostamizadeh,
// Gonina, Ben-Tzur, Hardt, Recht, Talwalkar: "A System for Massively
// Parallel Hyperparameter Tuning", MLSys 2020, Algorithm 2).
//
// Rung k holds the trials that finished budget r eta^(s + k) (s: the
// minimum early-stopping rate). A free group calls get_job:
//   for k = top - 1 down to 0:
//     candidates = the best floor(|rung k| / eta) of rung k
//     promotable = candidates not promoted out of rung k yet
//     if any: promote the best of them to rung k + 1
//   otherwise start a new trial in rung 0.
// No group ever waits for a rung to fill. |rung k| counts failed trials too
// (they rank last and are never promoted): a diverged configuration is the
// worst result a rung can have, not a missing one.
//
// Budgets: r eta^(s + k) for every k where that is below R, then R itself as
// the top rung (when R is not r eta^k, the last step is smaller than eta).
// The search ends after `max_trials` new trials once nothing is in flight
// and nothing can be promoted (the paper runs until a time limit).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "chorus/tune/rung_ranking.h"
#include "chorus/tune/scheduler.h"

namespace chorus {
namespace tune {

struct AshaOptions {
  int64_t min_budget = 1;   // r
  int64_t max_budget = 81;  // R
  int64_t eta = 3;
  int early_stopping_rate = 0;  // s
  int64_t max_trials = 100;
  Objective objective = Objective::kMaximize;
};

// The rungs' budgets; throws chorus::Error for a bad setting (r < 1,
// eta < 2, s < 0, r eta^s > R).
std::vector<int64_t> asha_rung_budgets(const AshaOptions& options);

class AshaScheduler : public Scheduler {
 public:
  explicit AshaScheduler(const AshaOptions& options);

  std::string name() const override { return "asha"; }
  Json settings() const override;
  Objective objective() const override { return options_.objective; }
  int64_t max_budget() const override { return budgets_.back(); }
  Job next_job() override;
  void report(int64_t trial, int rung, double metric) override;
  void report_failure(int64_t trial, int rung) override;
  int in_flight() const override { return static_cast<int>(running_.size()); }

  const std::vector<int64_t>& rung_budgets() const { return budgets_; }

 private:
  void record(int64_t trial, int rung, RungEntry entry);

  AshaOptions options_;
  std::vector<int64_t> budgets_;
  std::vector<std::vector<RungEntry>> rungs_;   // results per rung
  std::vector<std::set<int64_t>> promoted_;     // trials promoted out of rung k
  std::set<std::pair<int64_t, int>> running_;   // (trial, rung) in flight
  int64_t started_ = 0;
};

}  // namespace tune
}  // namespace chorus
