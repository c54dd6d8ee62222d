// The driver loop (rank 0 of the job): hands the scheduler's jobs to idle
// groups, records every start and report in the search log, saves the state
// file after each, and ends when the scheduler is done and no job runs.
//
// Resuming: with `resume` and an existing state file, the log is loaded, its
// header compared with this search's (same scheduler, settings, seed,
// objective and space, or an error naming the difference), its events
// replayed into the fresh scheduler, and the jobs that were running when the
// search stopped are run again first. Finished jobs are never repeated.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "chorus/tune/scheduler.h"
#include "chorus/tune/search_log.h"
#include "chorus/tune/search_space.h"
#include "chorus/tune/trial_groups.h"

namespace chorus {
namespace tune {

struct SearchOptions {
  uint64_t seed = 0;
  // Where the state is saved after every start and report ("": nowhere).
  std::string state_path;
  // Continue the search in state_path. Without it an existing state file is
  // an error (rather than overwritten); with it a missing one starts afresh.
  bool resume = false;
  // Called with one line per start, report and the end (progress output).
  std::function<void(const std::string&)> progress;
  // Stop as a kill would after this many reports in this run (0: never):
  // the state file is as of the last report, and running jobs are dropped.
  // For tests of resuming, and for a search in slices.
  int64_t stop_after_reports = 0;
};

// Runs the search; returns its log (finished: paused trials marked stopped,
// unless stopped by stop_after_reports). Throws chorus::Error for a bad
// state file, an empty space, or a state file that cannot be written.
SearchLog run_search(const SearchSpace& space, Scheduler& scheduler, TrialGroups& groups,
                     const SearchOptions& options);

}  // namespace tune
}  // namespace chorus
