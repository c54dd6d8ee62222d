#include "chorus/tune/asha.h"

#include "chorus/status.h"

namespace chorus {
namespace tune {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw Error(Status::InvalidArgument("ASHA: " + message)); }

}  // namespace

std::vector<int64_t> asha_rung_budgets(const AshaOptions& o) {
  if (o.min_budget < 1) invalid("the minimum budget r must be at least 1 unit, got " + std::to_string(o.min_budget));
  if (o.eta < 2) invalid("the reduction factor eta must be at least 2, got " + std::to_string(o.eta));
  if (o.early_stopping_rate < 0)
    invalid("the minimum early-stopping rate s must be at least 0, got " + std::to_string(o.early_stopping_rate));
  if (o.max_trials < 1) invalid("the number of trials must be at least 1, got " + std::to_string(o.max_trials));
  int64_t budget = o.min_budget;
  for (int i = 0; i < o.early_stopping_rate; ++i) {
    if (budget > o.max_budget / o.eta) budget = o.max_budget + 1;  // passes R (and stays in range)
    else budget *= o.eta;
  }
  if (budget > o.max_budget)
    invalid("the first rung's budget r eta^s (r " + std::to_string(o.min_budget) + ", eta " + std::to_string(o.eta) +
            ", s " + std::to_string(o.early_stopping_rate) + ") exceeds the maximum budget R " +
            std::to_string(o.max_budget));
  std::vector<int64_t> budgets;
  while (budget < o.max_budget) {
    budgets.push_back(budget);
    if (budget > o.max_budget / o.eta) break;
    budget *= o.eta;
  }
  budgets.push_back(o.max_budget);
  return budgets;
}

AshaScheduler::AshaScheduler(const AshaOptions& options)
    : options_(options), budgets_(asha_rung_budgets(options)), rungs_(budgets_.size()), promoted_(budgets_.size()) {}

Json AshaScheduler::settings() const {
  Json j = Json::object();
  j["min_budget"] = options_.min_budget;
  j["max_budget"] = options_.max_budget;
  j["eta"] = options_.eta;
  j["early_stopping_rate"] = options_.early_stopping_rate;
  j["max_trials"] = options_.max_trials;
  j["objective"] = objective_name(options_.objective);
  return j;
}

Job AshaScheduler::next_job() {
  Job job;
  for (int k = static_cast<int>(budgets_.size()) - 2; k >= 0; --k) {
    const std::vector<RungEntry>& rung = rungs_[static_cast<size_t>(k)];
    const size_t top = rung.size() / static_cast<size_t>(options_.eta);
    const std::vector<RungEntry> order = ranked(options_.objective, rung);
    for (size_t i = 0; i < top; ++i) {
      const RungEntry& e = order[i];
      if (e.failed || promoted_[static_cast<size_t>(k)].count(e.trial)) continue;
      promoted_[static_cast<size_t>(k)].insert(e.trial);
      job.kind = JobKind::kPromote;
      job.trial = e.trial;
      job.rung = k + 1;
      job.budget = budgets_[static_cast<size_t>(k) + 1];
      job.previous_budget = budgets_[static_cast<size_t>(k)];
      running_.insert({job.trial, job.rung});
      return job;
    }
  }
  if (started_ < options_.max_trials) {
    job.kind = JobKind::kStart;
    job.trial = started_++;
    job.rung = 0;
    job.budget = budgets_[0];
    running_.insert({job.trial, 0});
    return job;
  }
  job.kind = running_.empty() ? JobKind::kDone : JobKind::kWait;
  return job;
}

void AshaScheduler::record(int64_t trial, int rung, RungEntry entry) {
  if (running_.erase({trial, rung}) == 0)
    invalid("a report for trial " + std::to_string(trial) + " at rung " + std::to_string(rung) +
            ", which has no job in flight there");
  entry.trial = trial;
  rungs_[static_cast<size_t>(rung)].push_back(entry);
}

void AshaScheduler::report(int64_t trial, int rung, double metric) {
  RungEntry e;
  e.metric = metric;
  record(trial, rung, e);
}

void AshaScheduler::report_failure(int64_t trial, int rung) {
  RungEntry e;
  e.failed = true;
  record(trial, rung, e);
}

}  // namespace tune
}  // namespace chorus
