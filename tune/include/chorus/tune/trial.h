// What a trial function sees and returns, and the one place that runs it
// (shared by every implementation of TrialGroups): an exception or a
// non-finite metric becomes a failed job, never an error of the search.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "chorus/process_set.h"
#include "chorus/tune/scheduler.h"
#include "chorus/tune/search_space.h"

namespace chorus {
namespace tune {

struct TrialContext {
  int64_t trial = -1;
  int rung = 0;
  int64_t budget = 0;           // train until the model has had this many units
  int64_t previous_budget = 0;  // units it had after its previous rung (0: new)
  const Config* config = nullptr;
  int group = 0;                // index of the group of ranks running it
  // The ranks that train this trial together (the global set when the
  // search runs in one process).
  ProcessSet process_set;
  // Units this job trained, for the log's compute accounting. Preset to
  // budget - previous_budget (the trial continued from a checkpoint of its
  // previous rung); a trial that retrains from scratch sets it to budget.
  int64_t resource_used = 0;

  const Config& hyperparameters() const { return *config; }
};

// Trains the trial to ctx.budget and returns the metric (the scheduler's
// objective says whether higher or lower is better). Throw, or return NaN
// or infinity, to fail the trial.
using TrialFunction = std::function<double(TrialContext&)>;

// A job for a group: the scheduler's job and the trial's hyperparameters.
struct TrialJob {
  Job job;
  Config config;
};

// What a group reports back when a job ends.
struct JobReport {
  int group = -1;
  int64_t trial = -1;
  int rung = 0;
  bool failed = false;
  double metric = 0;
  std::string error;  // when failed
  // The group's process set failed (a member threw, maybe while the others
  // waited in one of the trial's collectives): its ranks need a new set
  // before their next job (process_set_groups.h).
  bool set_failed = false;
  int64_t resource_used = 0;
  double start_time = 0, end_time = 0;  // Unix time in seconds
};

// The messages between rank 0 and the groups' leaders, as JSON text (the
// transport moves bytes). A job carries no hyperparameters: every rank runs
// the same program with the same space and seed, so a group derives the
// configuration from (seed, trial) itself. Decoding throws chorus::Error
// naming the bad field.
std::string encode_job(const Job& job);
Job decode_job(const std::string& text);
std::string encode_report(const JobReport& report);
JobReport decode_report(const std::string& text);

// Wall-clock time as Unix seconds (the log's times; comparable across ranks
// on synchronised hosts).
double unix_time_now();

// Runs `fn` for `job` on `group`; catches everything it throws. When it
// throws, `on_throw` (if any) gets the report's error before the report is
// returned (a group's member fails its process set there; group_member.h).
JobReport run_trial_job(const TrialFunction& fn, const TrialJob& job, int group, ProcessSet process_set,
                        const std::function<void(const std::string&)>& on_throw = nullptr);

}  // namespace tune
}  // namespace chorus
