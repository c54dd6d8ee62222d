// TrialGroups in one process: each group is a thread that runs the trial
// function. Threads talk through a job slot per group and one queue of
// reports, each guarded by a mutex and woken by a condition variable.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "chorus/tune/trial_groups.h"

namespace chorus {
namespace tune {

class ThreadGroups : public TrialGroups {
 public:
  // Throws chorus::Error for groups < 1 or an empty function.
  ThreadGroups(int groups, TrialFunction fn);
  ~ThreadGroups() override;
  ThreadGroups(const ThreadGroups&) = delete;
  ThreadGroups& operator=(const ThreadGroups&) = delete;

  int size() const override { return static_cast<int>(threads_.size()); }
  void start(int group, const TrialJob& job) override;
  JobReport wait_for_report() override;
  void finish() override;

 private:
  void run(int group);

  TrialFunction fn_;
  std::mutex mu_;
  std::condition_variable work_cv_;    // a job arrived, or finish()
  std::condition_variable report_cv_;  // a report arrived
  std::vector<std::optional<TrialJob>> jobs_;  // per group: the job to run
  std::vector<bool> busy_;
  std::deque<JobReport> reports_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tune
}  // namespace chorus
