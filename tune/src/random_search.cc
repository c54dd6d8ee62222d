#include "chorus/tune/random_search.h"

#include "chorus/status.h"

namespace chorus {
namespace tune {

RandomSearchScheduler::RandomSearchScheduler(const RandomSearchOptions& options) : options_(options) {
  if (options.max_budget < 1)
    throw Error(Status::InvalidArgument("random search: the budget must be at least 1 unit, got " +
                                        std::to_string(options.max_budget)));
  if (options.trials < 1)
    throw Error(Status::InvalidArgument("random search: the number of trials must be at least 1, got " +
                                        std::to_string(options.trials)));
}

Json RandomSearchScheduler::settings() const {
  Json j = Json::object();
  j["max_budget"] = options_.max_budget;
  j["trials"] = options_.trials;
  j["objective"] = objective_name(options_.objective);
  return j;
}

Job RandomSearchScheduler::next_job() {
  Job job;
  if (started_ < options_.trials) {
    job.kind = JobKind::kStart;
    job.trial = started_++;
    job.budget = options_.max_budget;
    running_.insert(job.trial);
    return job;
  }
  job.kind = running_.empty() ? JobKind::kDone : JobKind::kWait;
  return job;
}

void RandomSearchScheduler::record(int64_t trial, int rung) {
  if (rung != 0 || running_.erase(trial) == 0)
    throw Error(Status::InvalidArgument("random search: a report for trial " + std::to_string(trial) + " at rung " +
                                        std::to_string(rung) + ", which has no job in flight there"));
}

void RandomSearchScheduler::report(int64_t trial, int rung, double) { record(trial, rung); }
void RandomSearchScheduler::report_failure(int64_t trial, int rung) { record(trial, rung); }

}  // namespace tune
}  // namespace chorus
