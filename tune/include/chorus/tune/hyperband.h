// Hyperband (Li, Jamieson, DeSalvo, Rostamizadeh, Talwalkar, JMLR 18(185),
// 2018, Algorithm 1). With maximum budget R and reduction factor eta:
//   s_max = floor(log_eta(R)),  B = (s_max + 1) R
//   for s = s_max, ..., 0 (one bracket each):
//     n = ceil(B / R * eta^s / (s + 1)),  r = R eta^-s
//     successive halving: for i = 0..s, run n_i = floor(n eta^-i)
//     configurations with r_i = r eta^i each, keep the best floor(n_i / eta).
// Budgets here are whole units: r_i = floor(R / eta^(s - i)), which is
// R eta^(i - s) rounded down and at least 1 (eta^s <= R); the last rung of
// every bracket is exactly R. Everything is computed in integers: n is
// ceil((s_max + 1) eta^s / (s + 1)), and s_max the largest s with
// eta^s <= R, so R = 243, eta = 3 gives s_max = 5 (log(243)/log(3) in
// doubles is 4.999999999999999, and R = 1000, eta = 10 gives 2.9999999999999996).
//
// Parallel groups: a free group takes work from the first bracket (largest
// s first) that has a job it can start: a new configuration of rung 0, or a
// promotion out of a rung that has completed. Within a bracket a rung
// completes when all its jobs reported (the algorithm is synchronous there);
// the next bracket's trials fill the groups meanwhile, so no group waits
// while any bracket has work. The brackets' sizes and budgets are the
// paper's; only their overlap in time is new.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "chorus/tune/rung_ranking.h"
#include "chorus/tune/scheduler.h"

namespace chorus {
namespace tune {

struct HyperbandRung {
  int64_t configurations = 0;  // n_i
  int64_t budget = 0;          // r_i (rounded down, whole units)
};

struct HyperbandBracket {
  int s = 0;
  std::vector<HyperbandRung> rungs;  // i = 0..s
};

// The brackets, s = s_max first. Throws chorus::Error for R < 1 or eta < 2.
std::vector<HyperbandBracket> hyperband_brackets(int64_t max_budget, int64_t eta);

struct HyperbandOptions {
  int64_t max_budget = 81;  // R
  int64_t eta = 3;
  Objective objective = Objective::kMaximize;
};

class HyperbandScheduler : public Scheduler {
 public:
  explicit HyperbandScheduler(const HyperbandOptions& options);

  std::string name() const override { return "hyperband"; }
  Json settings() const override;
  Objective objective() const override { return options_.objective; }
  int64_t max_budget() const override { return options_.max_budget; }
  Job next_job() override;
  void report(int64_t trial, int rung, double metric) override;
  void report_failure(int64_t trial, int rung) override;
  int in_flight() const override { return in_flight_; }

  const std::vector<HyperbandBracket>& brackets() const { return plan_; }

 private:
  struct RungState {
    std::vector<int64_t> members;        // trials given a job in this rung
    std::vector<RungEntry> results;      // their reports so far
    std::vector<int64_t> promotions;     // set when the rung below completes
    size_t promotions_issued = 0;
    bool complete = false;
  };
  struct BracketState {
    int64_t started = 0;  // new configurations issued (rung 0)
    std::vector<RungState> rungs;
  };

  void record(int64_t trial, int rung, RungEntry entry);
  void close_completed_rungs(size_t bracket);

  HyperbandOptions options_;
  std::vector<HyperbandBracket> plan_;
  std::vector<BracketState> state_;
  std::map<int64_t, size_t> bracket_of_;  // trial -> index into plan_
  int64_t next_trial_ = 0;
  int in_flight_ = 0;
};

}  // namespace tune
}  // namespace chorus
