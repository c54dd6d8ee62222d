// TrialGroups over process sets (docs/TUNE.md, "Groups over process sets"):
// the job's ranks split into groups of --ranks-per-trial consecutive ranks,
// each group a process set that trains one trial at a time data-parallel.
//
// ProcessSetGroups is the driver's side, on rank 0: start() sends a job to
// the group's first rank (its leader) with point-to-point messages, and a
// thread per group waits for that group's report and queues it for
// wait_for_report(). Group 0 is led by rank 0 itself: its jobs and reports
// pass through an in-process mailbox instead (serve_group on rank 0's main
// thread takes them), so rank 0 trains while the driver runs on a thread of
// its own. Every wait is a condition variable or a blocking receive.
//
// A group whose process set failed (a member's trial threw, maybe while the
// others waited in one of its collectives; its report has set_failed) cannot
// share a job over its set: until the driver has it replaced, its jobs (the
// "regroup" job, or "done") go from rank 0 to every member directly.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chorus/tune/trial_groups.h"

namespace chorus {
namespace tune {

// Which ranks form which group: group g is ranks [g K, (g + 1) K).
struct GroupLayout {
  int job_size = 1;
  int ranks_per_trial = 1;
  int groups = 1;

  // Throws chorus::Error (kInvalidArgument) for K < 1, K > job size, or a
  // job size that K does not divide, naming both numbers.
  static GroupLayout make(int job_size, int ranks_per_trial);
  int group_of(int rank) const { return rank / ranks_per_trial; }
  int leader(int group) const { return group * ranks_per_trial; }
  std::vector<int> ranks(int group) const;
};

// The names of the search's own messages and collectives (a trial's
// collectives must not use the prefix "tune:").
extern const char* const kJobMessage;     // rank 0 -> leader, then leader -> its group
extern const char* const kReportMessage;  // leader -> rank 0

class ProcessSetGroups : public TrialGroups {
 public:
  // On rank 0 only; starts a receiving thread per group led by another rank.
  explicit ProcessSetGroups(GroupLayout layout);
  ~ProcessSetGroups() override;
  ProcessSetGroups(const ProcessSetGroups&) = delete;
  ProcessSetGroups& operator=(const ProcessSetGroups&) = delete;

  int size() const override { return layout_.groups; }
  void start(int group, const TrialJob& job) override;
  // Throws chorus::Error when a group's report cannot arrive (its leader
  // died, the runtime stopped) or abort() was called.
  JobReport wait_for_report() override;
  // Sends every group a "done" job and waits for the receiving threads
  // (reports of jobs still running are dropped). Safe to call twice.
  void finish() override;
  // Sends every group a "regroup" job: every rank of the job then replaces
  // the failed groups' sets together (serve_group).
  void replace_failed_groups() override;

  // Group 0's side of the mailbox (rank 0's main thread): blocks until the
  // driver starts a job there or finishes (then a "done" job).
  Job take_local_job();
  void put_local_report(JobReport report);
  // Rank 0's own group failed outside its trial: wait_for_report throws
  // `error` from now on, so the driver stops.
  void abort(const std::string& error);

 private:
  void receive_reports(int group);
  // Sends `job` to the group's members that take jobs from rank 0 (its
  // leader; every member while its set has failed), group 0's leader
  // through the mailbox.
  void deliver(int group, const Job& job);
  // Records a report (from a receiving thread or the mailbox), under mu_.
  void record(int group, JobReport report);

  GroupLayout layout_;
  mutable std::mutex mu_;
  std::condition_variable report_cv_;  // a report (or a failure) arrived
  std::condition_variable work_cv_;    // a job for a group, or finish()
  std::deque<JobReport> reports_;
  std::string failure_;                // non-empty: wait_for_report throws it
  std::vector<bool> in_flight_;        // per group: a job started and not reported
  std::vector<bool> set_failed_;       // per group: its set failed and is not replaced yet
  std::deque<Job> local_jobs_;         // group 0's mailbox
  bool stopping_ = false;
  bool finished_ = false;
  std::vector<std::thread> receivers_;
};

}  // namespace tune
}  // namespace chorus
