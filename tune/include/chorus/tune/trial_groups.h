// The driver's view of the job's groups of ranks: a fixed number of groups,
// each running one trial job at a time. The driver (rank 0) hands a job to
// an idle group and waits for any group's report; how a group trains and how
// its report travels is the implementation's business:
//  - ThreadGroups (thread_groups.h): groups are threads of this process, for
//    a search in one process and for the tests of the driver;
//  - ProcessSetGroups (process_set_groups.h): each group a process set of
//    --ranks-per-trial ranks, jobs and reports sent over Chorus's transport.
#pragma once

#include "chorus/tune/trial.h"

namespace chorus {
namespace tune {

class TrialGroups {
 public:
  virtual ~TrialGroups() = default;
  virtual int size() const = 0;
  // Starts `job` on idle `group`; returns without waiting for it.
  virtual void start(int group, const TrialJob& job) = 0;
  // Blocks until a started job ends and returns its report (each job
  // reports exactly once). Called only while some job is running.
  virtual JobReport wait_for_report() = 0;
  // The search is over: groups leave their loops. Jobs still running finish
  // first; their reports are dropped (a resumed search re-runs them).
  virtual void finish() = 0;
  // Called while no job runs, after some report had set_failed: the groups
  // whose process set failed get a new one before their next job
  // (ProcessSetGroups: collective over every rank of the job). Groups that
  // never report set_failed (ThreadGroups) need nothing.
  virtual void replace_failed_groups() {}
};

}  // namespace tune
}  // namespace chorus
