// The search over the job's ranks (docs/TUNE.md, "Groups over process
// sets"): collective over every rank of the job, after chorus::init().
//
//  1. The ranks split into size / ranks_per_trial groups of consecutive
//     ranks, one process set each (add_process_set, on every rank).
//  2. Rank 0 runs the driver (run_search over ProcessSetGroups) on a thread
//     of its own; on its main thread it serves group 0 like every other
//     rank serves its group (serve_group). A group whose set failed (a
//     member's trial threw) gets a new set once no job runs, every rank
//     taking part (group_member.h).
//  3. When the search ends, rank 0 tells every group "done"; every rank
//     learns from rank 0 whether the search succeeded (a broadcast on the
//     global set), so all of them return or all throw the same error; the
//     groups' sets are removed.
#pragma once

#include <optional>

#include "chorus/tune/search_driver.h"
#include "chorus/tune/trial.h"

namespace chorus {
namespace tune {

// Every rank passes the same space, ranks_per_trial and options.seed (the
// groups derive each configuration from them) and a scheduler built with
// the same settings (only rank 0's is used; the others are ignored). Rank 0
// returns the search's log, the others std::nullopt. Throws chorus::Error
// on every rank for a bad ranks_per_trial (before any collective) and for
// a search rank 0 could not run (a bad state file, ...), with rank 0's
// message.
std::optional<SearchLog> run_distributed_search(const SearchSpace& space, Scheduler& scheduler,
                                                const TrialFunction& fn, int ranks_per_trial,
                                                const SearchOptions& options);

}  // namespace tune
}  // namespace chorus
