// Process sets: collectives over a subset of the job's ranks (Horovod's
// term; c10d's new_group). Every collective takes a set (the global set when
// none is given); each set negotiates readiness over its own members (a
// tensor name is unique within its set) and fuses within itself.
#pragma once

#include <cstdint>
#include <vector>

namespace chorus {

// A handle on a set of ranks; cheap to copy. The same id names the same set
// on every rank.
struct ProcessSet {
  int32_t id = 0;  // 0: the global set, every rank of the job

  static ProcessSet global() { return {}; }
  bool is_global() const { return id == 0; }
  bool operator==(const ProcessSet& o) const { return id == o.id; }
  bool operator!=(const ProcessSet& o) const { return id != o.id; }
};

// Collective over every rank of the job: each rank passes the same ranks
// (no duplicates, each in [0, size()), any order); returns the new set, with
// the same id on every rank. Ranks outside the set get it too but may not
// submit to it. Disagreeing ranks, a duplicate or an out-of-range rank:
// chorus::Error naming them.
ProcessSet add_process_set(const std::vector<int>& ranks);
// Collective over every rank of the job. The global set cannot be removed.
// Work on the set still in flight on any rank fails with an error naming the
// set; later use of the set is an error.
void remove_process_set(const ProcessSet& set);
// The set's ranks in ascending order (its set ranks are indices into this).
std::vector<int> process_set_ranks(const ProcessSet& set);
// This rank's index in process_set_ranks(set), or -1 when it is not a member.
int process_set_rank(const ProcessSet& set);
int process_set_size(const ProcessSet& set);
// The sets that exist now, the global set first.
std::vector<ProcessSet> process_sets();

}  // namespace chorus
