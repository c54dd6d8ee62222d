#include "chorus/tune/search_driver.h"

#include <sys/stat.h>

#include <cstdio>
#include <deque>

#include "chorus/status.h"
#include "chorus/tune/state_file.h"

namespace chorus {
namespace tune {
namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string metric_text(double metric) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", metric);
  return buf;
}

SearchLog open_log(const SearchSpace& space, Scheduler& scheduler, const SearchHeader& header,
                   const SearchOptions& options) {
  if (options.state_path.empty() || !file_exists(options.state_path)) return SearchLog(header);
  if (!options.resume)
    throw Error(Status::InvalidArgument("the search state file '" + options.state_path +
                                        "' exists: resume the search in it (--resume) or remove it"));
  SearchLog log = load_state_file(options.state_path);
  const std::string mismatch = log.header().difference(header);
  if (!mismatch.empty())
    throw Error(Status::InvalidArgument("search state file '" + options.state_path +
                                        "' belongs to another search: " + mismatch));
  // The configurations are a function of (seed, trial): a file whose
  // configurations differ was edited or written by another sampler.
  for (const TrialRecord& t : log.trials()) {
    if (!(t.config == space.sample(header.seed, t.id)))
      throw Error(Status::InvalidArgument("search state file '" + options.state_path + "': trial " +
                                          std::to_string(t.id) + "'s configuration (" + t.config.to_string() +
                                          ") is not the one seed " + std::to_string(header.seed) + " gives (" +
                                          space.sample(header.seed, t.id).to_string() + ")"));
  }
  try {
    log.replay_into(scheduler);
  } catch (const Error& e) {
    throw Error(Status(e.code(), "search state file '" + options.state_path + "' does not replay: " + e.what()));
  }
  return log;
}

}  // namespace

SearchLog run_search(const SearchSpace& space, Scheduler& scheduler, TrialGroups& groups,
                     const SearchOptions& options) {
  if (space.empty()) throw Error(Status::InvalidArgument("the search space has no hyperparameters"));
  SearchHeader header;
  header.scheduler = scheduler.name();
  header.settings = scheduler.settings();
  header.space = space.to_json();
  header.seed = options.seed;
  header.objective = scheduler.objective();
  header.max_budget = scheduler.max_budget();
  header.groups = groups.size();
  const auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  const auto save = [&](const SearchLog& log) {
    if (!options.state_path.empty()) throw_if_error(save_state_file(options.state_path, log));
  };

  SearchLog log = open_log(space, scheduler, header, options);
  std::deque<Job> reruns;
  for (const Job& job : log.pending_jobs()) reruns.push_back(job);
  if (log.reports() > 0 || !reruns.empty())
    say("resuming: " + std::to_string(log.trials().size()) + " trials, " + std::to_string(log.reports()) +
        " results, " + std::to_string(reruns.size()) + " jobs to run again");

  std::vector<bool> idle(static_cast<size_t>(groups.size()), true);
  int running = 0;
  int64_t reports = 0;
  bool stopped_early = false;
  // A group's process set failed: no job starts until every group is idle,
  // since replacing the set is collective over every rank of the job.
  bool replace_sets = false;
  JobKind last_answer = JobKind::kWait;
  while (true) {
    for (int g = 0; g < groups.size() && !replace_sets; ++g) {
      if (!idle[static_cast<size_t>(g)]) continue;
      Job job;
      const bool rerun = !reruns.empty();
      if (rerun) {
        job = reruns.front();
        reruns.pop_front();
      } else {
        job = scheduler.next_job();
        last_answer = job.kind;
        if (!job.runs()) break;
      }
      TrialJob trial_job{job, space.sample(options.seed, job.trial)};
      log.job_started(job, trial_job.config, g, unix_time_now(), rerun);
      save(log);
      say(std::string(rerun ? "rerun" : job_kind_name(job.kind)) + " trial " + std::to_string(job.trial) +
          " rung " + std::to_string(job.rung) + " budget " + std::to_string(job.budget) + " on group " +
          std::to_string(g) + ": " + trial_job.config.to_string());
      groups.start(g, trial_job);
      idle[static_cast<size_t>(g)] = false;
      ++running;
    }
    if (running == 0) {
      if (replace_sets) {
        groups.replace_failed_groups();
        replace_sets = false;
        say("replaced the process sets of the failed groups");
        continue;
      }
      if (last_answer == JobKind::kDone) break;
      throw Error(Status::Internal("scheduler '" + scheduler.name() + "' answered 'wait' with no job running"));
    }
    const JobReport r = groups.wait_for_report();
    idle[static_cast<size_t>(r.group)] = true;
    --running;
    if (r.failed) {
      scheduler.report_failure(r.trial, r.rung);
      log.job_failed(r.trial, r.rung, r.error, r.resource_used, r.end_time);
    } else {
      scheduler.report(r.trial, r.rung, r.metric);
      log.job_finished(r.trial, r.rung, r.metric, r.resource_used, r.end_time);
    }
    // Saved before it is announced: a line on the progress output means the
    // result is on disk.
    save(log);
    say("trial " + std::to_string(r.trial) + " rung " + std::to_string(r.rung) +
        (r.failed ? " failed: " + r.error : ": " + metric_text(r.metric)));
    if (r.set_failed) {
      replace_sets = true;
      say("group " + std::to_string(r.group) + "'s process set failed; it gets a new one once no job runs");
    }
    if (options.stop_after_reports > 0 && ++reports >= options.stop_after_reports) {
      stopped_early = true;
      break;
    }
  }
  groups.finish();
  if (stopped_early) {
    say("stopped after " + std::to_string(reports) + " results; resume to continue");
    return log;
  }
  log.finish();
  save(log);
  say("search done: " + std::to_string(log.trials().size()) + " trials");
  return log;
}

}  // namespace tune
}  // namespace chorus
