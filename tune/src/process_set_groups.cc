#include "chorus/tune/process_set_groups.h"

#include "chorus/chorus.h"
#include "chorus/tune/group_messages.h"

namespace chorus {
namespace tune {

const char* const kJobMessage = "tune:job";
const char* const kReportMessage = "tune:report";

GroupLayout GroupLayout::make(int job_size, int ranks_per_trial) {
  if (ranks_per_trial < 1)
    throw Error(Status::InvalidArgument("--ranks-per-trial must be at least 1, got " + std::to_string(ranks_per_trial)));
  if (ranks_per_trial > job_size || job_size % ranks_per_trial != 0)
    throw Error(Status::InvalidArgument("--ranks-per-trial " + std::to_string(ranks_per_trial) +
                                        " does not divide the job's " + std::to_string(job_size) +
                                        " ranks into whole groups; expected a divisor of " + std::to_string(job_size)));
  GroupLayout layout;
  layout.job_size = job_size;
  layout.ranks_per_trial = ranks_per_trial;
  layout.groups = job_size / ranks_per_trial;
  return layout;
}

std::vector<int> GroupLayout::ranks(int group) const {
  std::vector<int> out;
  for (int r = leader(group); r < leader(group) + ranks_per_trial; ++r) out.push_back(r);
  return out;
}

ProcessSetGroups::ProcessSetGroups(GroupLayout layout) : layout_(layout) {
  in_flight_.assign(static_cast<size_t>(layout_.groups), false);
  set_failed_.assign(static_cast<size_t>(layout_.groups), false);
  for (int g = 1; g < layout_.groups; ++g) receivers_.emplace_back([this, g] { receive_reports(g); });
}

ProcessSetGroups::~ProcessSetGroups() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; finish() already told every group it could.
  }
}

void ProcessSetGroups::start(int group, const TrialJob& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (group < 0 || group >= size() || in_flight_[static_cast<size_t>(group)] || stopping_)
      throw Error(Status::Internal("group " + std::to_string(group) + " cannot take a job: it is busy, unknown or finished"));
    in_flight_[static_cast<size_t>(group)] = true;
  }
  // The configuration is not sent: the group derives it from (seed, trial).
  deliver(group, job.job);
}

void ProcessSetGroups::deliver(int group, const Job& job) {
  bool to_every_member = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    to_every_member = set_failed_[static_cast<size_t>(group)];
    if (group == 0) local_jobs_.push_back(job);
    work_cv_.notify_all();
  }
  for (int r : layout_.ranks(group)) {
    if (r == 0 || (r != layout_.leader(group) && !to_every_member)) continue;
    send_text(kJobMessage, encode_job(job), r);
  }
}

void ProcessSetGroups::replace_failed_groups() {
  Job regroup;
  regroup.kind = JobKind::kRegroup;
  for (int g = 0; g < layout_.groups; ++g) deliver(g, regroup);
  std::lock_guard<std::mutex> lock(mu_);
  set_failed_.assign(set_failed_.size(), false);
}

void ProcessSetGroups::record(int group, JobReport report) {
  const size_t g = static_cast<size_t>(group);
  in_flight_[g] = false;
  if (report.set_failed) set_failed_[g] = true;
  if (!stopping_) reports_.push_back(std::move(report));  // after finish(): dropped
  report_cv_.notify_all();
}

JobReport ProcessSetGroups::wait_for_report() {
  std::unique_lock<std::mutex> lock(mu_);
  report_cv_.wait(lock, [this] { return !reports_.empty() || !failure_.empty(); });
  if (!failure_.empty()) throw Error(Status::Internal(failure_));
  JobReport r = std::move(reports_.front());
  reports_.pop_front();
  return r;
}

void ProcessSetGroups::finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = stopping_ = true;
  }
  std::string first_error;
  Job done;
  done.kind = JobKind::kDone;
  for (int g = 0; g < layout_.groups; ++g) {
    try {
      deliver(g, done);
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  for (std::thread& t : receivers_) t.join();
  receivers_.clear();
  if (!first_error.empty()) throw Error(Status::Internal("telling the groups that the search is done: " + first_error));
}

Job ProcessSetGroups::take_local_job() {
  std::unique_lock<std::mutex> lock(mu_);
  work_cv_.wait(lock, [this] { return !local_jobs_.empty(); });
  Job job = local_jobs_.front();
  local_jobs_.pop_front();
  return job;
}

void ProcessSetGroups::put_local_report(JobReport report) {
  std::lock_guard<std::mutex> lock(mu_);
  record(0, std::move(report));
}

void ProcessSetGroups::abort(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_.empty()) failure_ = error;
  report_cv_.notify_all();
}

void ProcessSetGroups::receive_reports(int group) {
  const size_t g = static_cast<size_t>(group);
  const int leader = layout_.leader(group);
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || in_flight_[g]; });
      if (!in_flight_[g]) return;  // stopping with nothing to wait for
    }
    std::string text;
    try {
      text = recv_text(kReportMessage, leader);
    } catch (const std::exception& e) {
      abort("group " + std::to_string(group) + " (led by rank " + std::to_string(leader) +
            ") cannot report: " + e.what());
      return;
    }
    JobReport report;
    try {
      report = decode_report(text);
    } catch (const std::exception& e) {
      abort("group " + std::to_string(group) + " sent a malformed report: " + e.what());
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    record(group, std::move(report));
  }
}

}  // namespace tune
}  // namespace chorus
