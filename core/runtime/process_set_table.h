// ProcessSetTable: the process sets that exist on this rank (process_set.h),
// id -> ranks in ascending order. Framework threads read it to check their
// submissions; the background thread changes it when it processes an add or
// remove response, at the same point of the response order on every rank.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chorus/process_set.h"
#include "chorus/status.h"

namespace chorus {

class ProcessSetTable {
 public:
  // The global set (id 0) holds every rank of a job of `world_size`.
  explicit ProcessSetTable(int world_size);

  void add(int32_t id, std::vector<int> ranks);
  void remove(int32_t id);
  // Records that a member failed the set (fail_process_set()); the first
  // failure stands. Returns what the set's work fails with from now on
  // (set_failure_text()), or "" when no such set exists.
  std::string fail(int32_t id, const ProcessSetFailure& failure);
  // The set's ranks; an error naming the id when no such set exists.
  Status ranks(int32_t id, std::vector<int>* out) const;
  // Why the set failed; nullopt while it has not (or does not exist).
  std::optional<ProcessSetFailure> failure(int32_t id) const;
  // What submissions to a failed set fail with (kAborted, naming the
  // failing rank and its reason); OK when the set has not failed.
  Status usable(int32_t id) const;
  bool contains(int32_t id) const;
  // The ids of the sets that exist, ascending (the global set first).
  std::vector<int32_t> ids() const;
  // The name of the set's next barrier: members call barrier() on a set the
  // same number of times, so a per-set counter names the same one on each.
  std::string next_barrier_name(int32_t id);

  // "[0, 2, 3]".
  static std::string describe(const std::vector<int>& ranks);

 private:
  struct Entry {
    std::vector<int> ranks;
    uint64_t barriers = 0;
    std::optional<ProcessSetFailure> failure;
  };
  mutable std::mutex mutex_;
  std::map<int32_t, Entry> sets_;
};

// Checks a rank list given to add_process_set against a job of `world_size`
// and returns it sorted: an InvalidArgument for an empty list, a duplicate
// or an out-of-range rank, naming it.
Status normalize_process_set_ranks(const std::vector<int>& ranks, int world_size, std::vector<int>* out);

}  // namespace chorus
