// The search's record: every trial (hyperparameters, one entry per rung with
// its budget, metric, group and times, final state) and the sequence of
// scheduling events that produced it. The events are what resuming needs:
// the schedulers decide as a function of the sequence of jobs handed out and
// results reported (scheduler.h), so replaying that sequence into a fresh
// scheduler rebuilds it exactly, and each replayed job is checked against the
// one recorded (a state file from another search fails there, naming the
// event). The trials are what people read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/tune/json.h"
#include "chorus/tune/scheduler.h"
#include "chorus/tune/search_space.h"

namespace chorus {
namespace tune {

enum class TrialState {
  kRunning,    // a job of it is in flight
  kPaused,     // finished a rung below the top; may still be promoted
  kCompleted,  // finished the full budget
  kFailed,     // diverged or threw
  kStopped,    // paused when the search ended: stopped early
};
const char* trial_state_name(TrialState state);

struct RungRecord {
  int rung = 0;
  int64_t budget = 0;
  int64_t previous_budget = 0;
  int group = -1;             // which group of ranks ran it (the last one, if re-run)
  int attempts = 1;           // > 1 when a resumed search re-ran it
  double start_time = 0;      // Unix time in seconds
  double end_time = 0;        // 0 while running
  bool finished = false;
  bool failed = false;
  double metric = 0;          // when finished and not failed
  std::string error;          // when failed
  int64_t resource_used = 0;  // units this job trained
};

struct TrialRecord {
  int64_t id = -1;
  int bracket = 0;
  Config config;
  TrialState state = TrialState::kRunning;
  std::vector<RungRecord> rungs;

  int64_t budget_used() const;  // sum of the rungs' resource_used
  // The last finished, successful rung, or nullptr.
  const RungRecord* last_result() const;
};

// What identifies a search: a state file resumes only the same one.
struct SearchHeader {
  std::string scheduler;  // Scheduler::name()
  Json settings;          // Scheduler::settings()
  Json space;             // SearchSpace::to_json()
  uint64_t seed = 0;
  Objective objective = Objective::kMaximize;
  int64_t max_budget = 0;
  int groups = 0;         // informational: a resumed search may use another number

  Json to_json() const;
  static SearchHeader from_json(const Json& j);
  // Empty when `other` describes the same search, else what differs
  // ("its scheduler is 'asha', this search's is 'hyperband'").
  std::string difference(const SearchHeader& other) const;
};

class SearchLog {
 public:
  explicit SearchLog(SearchHeader header) : header_(std::move(header)) {}

  const SearchHeader& header() const { return header_; }
  const std::vector<TrialRecord>& trials() const { return trials_; }
  const TrialRecord* trial(int64_t id) const;

  // A job handed to `group` at `time`: a new job records a scheduling event;
  // re-running a pending job after a resume (`rerun`) records none.
  void job_started(const Job& job, const Config& config, int group, double time, bool rerun = false);
  void job_finished(int64_t trial, int rung, double metric, int64_t resource_used, double time);
  void job_failed(int64_t trial, int rung, const std::string& error, int64_t resource_used, double time);
  // At the end: paused trials become stopped.
  void finish();

  // Jobs started and not finished (in flight, or cut off by a kill), in the
  // order they were started.
  std::vector<Job> pending_jobs() const;
  // Number of results (finished or failed jobs) recorded.
  int64_t reports() const;

  // Feeds the recorded events to a fresh `scheduler`; throws chorus::Error
  // naming the first event whose replayed job differs from the recorded one.
  void replay_into(Scheduler& scheduler) const;

  Json to_json() const;
  // Throws chorus::Error (kInvalidArgument) saying what is wrong.
  static SearchLog from_json(const Json& j);

 private:
  struct Event {
    enum Kind { kJob, kResult, kFailure } kind = kJob;
    int64_t trial = -1;
    int rung = 0;
    double metric = 0;
  };
  TrialRecord& record_of(int64_t trial);
  RungRecord& rung_of(int64_t trial, int rung);

  SearchHeader header_;
  std::vector<TrialRecord> trials_;  // by id: ids are 0, 1, 2, ... in creation order
  std::vector<Event> events_;
};

}  // namespace tune
}  // namespace chorus
