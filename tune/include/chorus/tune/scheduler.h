// The scheduler interface: pure decision logic, no ranks, no clocks, no I/O.
// A free group asks next_job(); the scheduler answers with a new trial, a
// promotion of an existing trial to a larger budget, "wait" (nothing to do
// until some running job reports) or "done" (nothing more, ever). Every job
// ends with exactly one report(): a metric or a failure.
//
// Determinism: a scheduler's decisions are a function of its settings and
// of the sequence of next_job() answers and reports it has seen. A next_job()
// that answers wait or done changes nothing. Replaying the recorded sequence
// into a fresh scheduler therefore rebuilds its state exactly (search_log.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/tune/json.h"

namespace chorus {
namespace tune {

// Which way a metric improves: accuracy is maximised, a loss minimised.
enum class Objective { kMaximize, kMinimize };
const char* objective_name(Objective objective);  // "maximize", "minimize"
// True when metric `a` is strictly better than `b`.
bool better(Objective objective, double a, double b);

enum class JobKind {
  kStart,    // a new trial: train from scratch to `budget`
  kPromote,  // an existing trial: continue from `previous_budget` to `budget`
  kWait,     // nothing now; ask again after the next report
  kDone,     // the search has nothing more to run
  // Never a scheduler's answer: ProcessSetGroups tells every group to
  // replace the process sets that failed (process_set_groups.h).
  kRegroup,
};
const char* job_kind_name(JobKind kind);

// Budgets are whole resource units (epochs or steps, the trial function's
// choice), at least 1; `budget` is the total amount of training the trial
// has had when the job ends, so a promoted trial that keeps its model trains
// budget - previous_budget more units.
struct Job {
  JobKind kind = JobKind::kWait;
  int64_t trial = -1;
  int rung = 0;               // index of the rung this job completes
  int64_t budget = 0;
  int64_t previous_budget = 0;  // 0 for a new trial
  int bracket = 0;            // Hyperband's bracket s; 0 for the others

  bool runs() const { return kind == JobKind::kStart || kind == JobKind::kPromote; }
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // "hyperband", "asha", "random".
  virtual std::string name() const = 0;
  // The settings that decide its behaviour (a resumed search must have the same).
  virtual Json settings() const = 0;
  virtual Objective objective() const = 0;
  // The largest budget any job gets.
  virtual int64_t max_budget() const = 0;

  virtual Job next_job() = 0;
  // The job (trial, rung) ended with `metric` (finite).
  virtual void report(int64_t trial, int rung, double metric) = 0;
  // The job (trial, rung) failed: the trial diverged or threw. It ranks below
  // every trial with a metric and is never promoted.
  virtual void report_failure(int64_t trial, int rung) = 0;
  // Jobs handed out and not reported yet.
  virtual int in_flight() const = 0;
};

}  // namespace tune
}  // namespace chorus
