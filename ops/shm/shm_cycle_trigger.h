// The cycle trigger for a job whose ranks share one host, through a shared
// segment instead of MPI messages.
//
// The protocol is MpiCycleTrigger's: rank 0 starts cycle k when it has
// local work, another rank rang its doorbell for k (held back while rank 0
// has nothing in flight, see kLoneDoorbellDelay), or its timer is due (not
// sooner than the minimum cycle interval after the previous start); the
// other ranks ring the doorbell once per cycle when they have work and wait
// for the start. Here a doorbell is the cycle number a rank writes into its
// slot, a start is the count of started cycles in the header, and each goes
// with a ring of the receiver's wake word, the same futex word that the
// receiver's own framework threads notify. So every rank sleeps in one futex
// wait until something concerns it, and an idle rank never wakes: MPI
// offers no such wait, and polling it cost an idle rank 1-4% of a core on
// this kind of VM, where each wake-up is charged CPU that grows with the
// memory the process has used (docs/MEASUREMENTS.md, "Idle wake-ups").
//
// Between cycles a rank yields for a while, then sleeps with a backoff, and
// only an idle one sleeps until rung (the .cc file says why). A rank that
// waits for its peers (it asked for a cycle, or has collectives in flight)
// wakes every LocalPeers::kInterval at the latest to check that they are
// still alive: a dead peer is an error naming it, not a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "protocol/cycle_trigger.h"
#include "ops/local_peers.h"
#include "ops/shm/shm_group.h"
#include "base/wake_signal.h"

namespace chorus {

class ShmCycleTrigger : public CycleTrigger {
 public:
  // The data area a group needs for `ranks` ranks.
  static size_t data_bytes(int ranks);

  // `group`: every rank of the job, with data_bytes() of zero-filled data;
  // `peers`: the other ranks' processes.
  ShmCycleTrigger(std::unique_ptr<ShmGroup> group, double min_interval_ms, LocalPeers peers);

  WakeSignal* wake_signal() override { return wake_.get(); }
  Status wait_for_cycle(const LocalWork& work, std::optional<Clock::time_point> timer) override;
  void set_min_interval_ms(double ms) override { min_interval_ = std::chrono::duration<double, std::milli>(ms); }
  // wait_a_while() and the tops of the waiting loops do.
  bool lets_waiters_run_cycles() const override { return true; }

 private:
  struct Header;
  struct RankSlot;

  Status coordinator_wait(const LocalWork& work, std::optional<Clock::time_point> timer);
  Status worker_wait(const LocalWork& work);
  // Whether another rank asked for the next cycle.
  bool doorbell_rang() const;
  // One step of waiting for something to change: a yield while spinning,
  // else a sleep on the wake word (see the constants in the .cc file), at
  // most one liveness interval long while `watching` the peers.
  void wait_a_while(const LocalWork& work, Clock::time_point now, std::optional<Clock::time_point> timer,
                    bool watching);
  // Between sleeps: an error when this rank waits for its peers and one died.
  Status watch_peers(bool watching, Clock::time_point now);
  RankSlot& slot(int rank) const;

  std::unique_ptr<ShmGroup> group_;
  Header* header_;
  std::unique_ptr<WakeSignal> wake_;  // on this rank's slot
  LocalPeers peers_;
  std::chrono::duration<double, std::milli> min_interval_;
  uint64_t next_cycle_ = 0;
  Clock::time_point last_start_{};     // rank 0
  Clock::time_point spin_until_{};
  std::chrono::microseconds backoff_{};  // the next sleep's length
  bool doorbell_sent_ = false;          // other ranks: asked for next_cycle_
};

}  // namespace chorus
