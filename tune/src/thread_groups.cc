#include "chorus/tune/thread_groups.h"

#include <algorithm>

#include "chorus/status.h"

namespace chorus {
namespace tune {

ThreadGroups::ThreadGroups(int groups, TrialFunction fn) : fn_(std::move(fn)) {
  if (groups < 1) throw Error(Status::InvalidArgument("a search needs at least 1 group, got " + std::to_string(groups)));
  if (!fn_) throw Error(Status::InvalidArgument("the trial function is empty"));
  jobs_.resize(static_cast<size_t>(groups));
  busy_.assign(static_cast<size_t>(groups), false);
  for (int g = 0; g < groups; ++g) threads_.emplace_back([this, g] { run(g); });
}

ThreadGroups::~ThreadGroups() { finish(); }

void ThreadGroups::start(int group, const TrialJob& job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (group < 0 || group >= size() || busy_[static_cast<size_t>(group)] || stopping_)
    throw Error(Status::Internal("group " + std::to_string(group) + " cannot take a job: it is busy, unknown or finished"));
  jobs_[static_cast<size_t>(group)] = job;
  busy_[static_cast<size_t>(group)] = true;
  work_cv_.notify_all();
}

JobReport ThreadGroups::wait_for_report() {
  std::unique_lock<std::mutex> lock(mu_);
  if (reports_.empty() && std::none_of(busy_.begin(), busy_.end(), [](bool b) { return b; }))
    throw Error(Status::Internal("waiting for a report while no group runs a job"));
  report_cv_.wait(lock, [this] { return !reports_.empty(); });
  JobReport r = std::move(reports_.front());
  reports_.pop_front();
  return r;
}

void ThreadGroups::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    work_cv_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
}

void ThreadGroups::run(int group) {
  const size_t g = static_cast<size_t>(group);
  while (true) {
    TrialJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || jobs_[g].has_value(); });
      if (stopping_) return;  // a job handed over but not begun is dropped too
      job = std::move(*jobs_[g]);
      jobs_[g].reset();
    }
    JobReport report = run_trial_job(fn_, job, group, ProcessSet::global());
    std::lock_guard<std::mutex> lock(mu_);
    busy_[g] = false;
    reports_.push_back(std::move(report));
    report_cv_.notify_all();
  }
}

}  // namespace tune
}  // namespace chorus
