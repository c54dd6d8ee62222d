// Process sets: collectives over a subset of the job's ranks (Horovod's
// term; c10d's new_group). Every collective takes a set (the global set when
// none is given); each set negotiates readiness over its own members (a
// tensor name is unique within its set) and fuses within itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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
// submit to it. Disagreeing ranks (kMismatch), a duplicate or an
// out-of-range rank (kInvalidArgument, even on the ranks whose list was
// good: the call fails on every rank, naming the rank that refused its
// list): chorus::Error naming them.
ProcessSet add_process_set(const std::vector<int>& ranks);
// Collective over every rank of the job. The global set cannot be removed.
// Work on the set still in flight on any rank fails with an error naming the
// set; later use of the set is an error. A set one rank cannot remove (the
// global set, one that does not exist) fails the call on every rank.
// A failed set (fail_process_set) can be removed like any other.
void remove_process_set(const ProcessSet& set);

// Who failed a set and why (fail_process_set).
struct ProcessSetFailure {
  int rank = -1;       // the member that failed it (a rank of the job)
  std::string reason;  // as that member gave it
};
// One member gives up on `set` (say its trial threw while the others may be
// waiting for it in one of the set's collectives): the set's pending work
// fails on every member, and every later submission to it fails at once,
// with kAborted "process set <id> [<ranks>] failed on rank <r>: <reason>".
// It needs no other rank's call: members blocked in the set's collectives
// are released by their own runtime. The global set and the other sets go
// on; the failed set stays until it is removed (remove_process_set, which
// is collective over the job as usual), and a new set can be added. Returns
// once the failure is in effect on this rank; the first failure stands (a
// set that already failed returns at once). Errors: the global set, a set
// this rank is not a member of, one that does not exist, an empty reason.
// Failure on a member's death is not covered: a dead rank still ends the
// job (docs/DESIGN.md "Process sets").
void fail_process_set(const ProcessSet& set, const std::string& reason);
// Why `set` failed, as far as this rank knows (every member knows by the
// time the set's work has failed there); nullopt while it has not.
std::optional<ProcessSetFailure> process_set_failure(const ProcessSet& set);
// The set's ranks in ascending order (its set ranks are indices into this).
std::vector<int> process_set_ranks(const ProcessSet& set);
// This rank's index in process_set_ranks(set), or -1 when it is not a member.
int process_set_rank(const ProcessSet& set);
int process_set_size(const ProcessSet& set);
// The sets that exist now, the global set first.
std::vector<ProcessSet> process_sets();

}  // namespace chorus
