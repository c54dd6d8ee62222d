// ShmSignals: the control block at the start of a shared segment, through
// which the ranks of a host tell each other how far they have got.
//
// Each rank owns one cache line holding its pid and monotonic progress
// counters (how many chunks it has copied in, how many it has reduced); only
// it writes them, everyone reads them. Counters never go back, so there is
// nothing to reset between collectives and no ABA problem.
//
// Waiting for the others: poll (a few pause instructions, then sched_yield,
// so an oversubscribed core runs the peer being waited for) for up to a
// millisecond, then sleep on a futex "doorbell" word in the segment that
// every post bumps.
// Sleeps are sliced: between slices the waiter checks that the ranks it is
// waiting for are still alive and that its deadline has not passed, so a
// dead or stuck peer becomes an error naming it, never a hang.
//
// A rank that fails on its own (its cross-host step returned an error, say)
// is alive and would only be noticed at the deadline: it posts the failure
// with its reason instead, which rings the doorbell, and every wait for it
// returns an error quoting that reason at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "chorus/status.h"

namespace chorus {

class ShmSignals {
 public:
  enum Counter { kArrived = 0, kReduced = 1, kNumCounters = 2 };
  // Describes what a wait was for, for error messages ("finish reducing
  // chunk 3 of 8 of an allreduce of 1048576 bytes"); called only on error.
  using Describe = std::function<std::string()>;

  // Bytes of control block for `ranks` ranks (a multiple of 128).
  static size_t bytes(int ranks);

  // `memory`: bytes(ranks) zero-filled bytes in a segment every rank maps.
  ShmSignals(void* memory, int ranks, int rank, std::chrono::milliseconds timeout);

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  // This rank's pid (for the liveness checks) and its rank in the job, by
  // which error messages name it: a host's group ranks are local ranks, which
  // users do not see when the job spans hosts.
  void set_my_identity(pid_t pid, int job_rank);
  pid_t pid_of(int rank) const;
  int job_rank_of(int rank) const;

  // This rank's own `counter`, as it last posted it.
  uint64_t mine(Counter counter) const;
  // Sets this rank's `counter` to `value` and wakes sleeping waiters.
  void post(Counter counter, uint64_t value);
  // Marks this rank as failed with `reason` (the first call wins) and wakes
  // the waiters: waits for this rank then fail instead of waiting on.
  void post_failure(const std::string& reason);
  // Returns when every rank's `counter` is at least `target`; an error when
  // a rank still short of it has died or posted a failure, or after the
  // timeout.
  Status wait_all(Counter counter, uint64_t target, const Describe& what);

 private:
  bool all_reached(Counter counter, uint64_t target) const;
  // The error for the first rank short of `target` that posted a failure;
  // OK when none did.
  Status posted_failure(Counter counter, uint64_t target, const Describe& what) const;
  void ring_doorbell();
  // Sleeps on the doorbell for at most one slice unless it rang since `seen`.
  void sleep_on_doorbell(uint32_t seen);
  Status check_peers(Counter counter, uint64_t target, std::chrono::steady_clock::duration waited,
                     const Describe& what) const;

  struct Doorbell;
  struct RankLine;
  Doorbell* doorbell_;
  RankLine* lines_;
  int ranks_;
  int rank_;
  std::chrono::milliseconds timeout_;
};

}  // namespace chorus
