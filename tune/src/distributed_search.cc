#include "chorus/tune/distributed_search.h"

#include <exception>
#include <thread>

#include "chorus/chorus.h"
#include "chorus/tune/group_member.h"
#include "chorus/tune/group_messages.h"
#include "chorus/tune/process_set_groups.h"

namespace chorus {
namespace tune {

std::optional<SearchLog> run_distributed_search(const SearchSpace& space, Scheduler& scheduler,
                                                const TrialFunction& fn, int ranks_per_trial,
                                                const SearchOptions& options) {
  if (!fn) throw Error(Status::InvalidArgument("the trial function is empty"));
  const GroupLayout layout = GroupLayout::make(size(), ranks_per_trial);
  std::vector<ProcessSet> sets;
  for (int g = 0; g < layout.groups; ++g) sets.push_back(add_process_set(layout.ranks(g)));
  const int me = rank();

  std::optional<SearchLog> log;
  std::string error;  // rank 0: why the search failed ("" when it did not)
  if (me == 0) {
    ProcessSetGroups groups(layout);
    std::thread driver([&] {
      try {
        log = run_search(space, scheduler, groups, options);
      } catch (const std::exception& e) {
        error = e.what();
      }
      // run_search finished the groups unless it threw: every group must
      // hear "done" either way, or it would wait for a job forever.
      try {
        groups.finish();
      } catch (const std::exception& e) {
        if (error.empty()) error = e.what();
      }
    });
    try {
      serve_group(layout, &sets, fn, space, options.seed, &groups);
    } catch (const std::exception& e) {
      // The driver may be waiting for group 0's report: stop it.
      groups.abort(std::string("rank 0's group failed: ") + e.what());
      driver.join();
      throw;
    }
    driver.join();
  } else {
    serve_group(layout, &sets, fn, space, options.seed, nullptr);
  }

  // Every rank has left its group: all return, or all throw rank 0's error.
  const std::string outcome = broadcast_text("tune:outcome", error, 0, ProcessSet::global());
  for (const ProcessSet& set : sets) remove_process_set(set);
  if (!outcome.empty()) throw Error(Status::InvalidArgument(outcome));
  return log;
}

}  // namespace tune
}  // namespace chorus
