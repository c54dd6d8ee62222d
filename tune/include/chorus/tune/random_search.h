// Random search, the baseline: `trials` configurations, each trained to the
// full budget in one job (one rung), none stopped early.
#pragma once

#include <cstdint>
#include <set>

#include "chorus/tune/scheduler.h"

namespace chorus {
namespace tune {

struct RandomSearchOptions {
  int64_t max_budget = 81;
  int64_t trials = 10;
  Objective objective = Objective::kMaximize;
};

class RandomSearchScheduler : public Scheduler {
 public:
  // Throws chorus::Error for a budget or a number of trials below 1.
  explicit RandomSearchScheduler(const RandomSearchOptions& options);

  std::string name() const override { return "random"; }
  Json settings() const override;
  Objective objective() const override { return options_.objective; }
  int64_t max_budget() const override { return options_.max_budget; }
  Job next_job() override;
  void report(int64_t trial, int rung, double metric) override;
  void report_failure(int64_t trial, int rung) override;
  int in_flight() const override { return static_cast<int>(running_.size()); }

 private:
  void record(int64_t trial, int rung);

  RandomSearchOptions options_;
  int64_t started_ = 0;
  std::set<int64_t> running_;
};

}  // namespace tune
}  // namespace chorus
