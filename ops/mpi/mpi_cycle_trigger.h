// The cycle trigger over MPI, on a communicator of its own.
//
// Ranks other than 0 keep one receive posted for the coordinator's "start
// cycle k" message. When such a rank has local work it sends rank 0 a
// doorbell carrying the cycle number it wants (one per cycle at most).
// Rank 0 keeps one receive posted for doorbells and starts cycle k, by
// sending "start cycle k" to every rank, when it has local work, a doorbell
// for k arrived, or its timer is due, but not sooner than the minimum cycle
// interval after the previous start. Doorbells for cycles that already
// started are stale and ignored. Waiting combines the local wake signal
// with polling MPI at a backoff, so an idle rank costs almost no CPU. A rank
// that waits for its peers (it asked for a cycle, or has collectives in
// flight) checks that those on its host are alive (LocalPeers).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "protocol/cycle_trigger.h"
#include "ops/local_peers.h"

namespace chorus {

class MpiCycleTrigger : public CycleTrigger {
 public:
  // `peers`: the other ranks of this host.
  MpiCycleTrigger(MPI_Comm comm, double min_interval_ms, LocalPeers peers);
  ~MpiCycleTrigger() override;

  WakeSignal* wake_signal() override { return &wake_; }
  Status wait_for_cycle(const LocalWork& work, std::optional<Clock::time_point> timer) override;
  void set_min_interval_ms(double ms) override { min_interval_ = std::chrono::duration<double, std::milli>(ms); }

 private:
  Status coordinator_wait(const LocalWork& work, std::optional<Clock::time_point> timer);
  Status worker_wait(const LocalWork& work);
  // Consumes arrived doorbells; true if one asks for the next cycle.
  Status drain_doorbells(bool* requested);

  MPI_Comm comm_;
  WakeSignal wake_;
  LocalPeers peers_;
  int rank_ = 0;
  int size_ = 1;
  std::chrono::duration<double, std::milli> min_interval_;
  uint64_t next_cycle_ = 0;
  Clock::time_point last_start_{};

  // Coordinator.
  MPI_Request doorbell_recv_ = MPI_REQUEST_NULL;
  uint64_t doorbell_in_ = 0;
  // Other ranks.
  MPI_Request start_recv_ = MPI_REQUEST_NULL;
  uint64_t start_in_ = 0;
  MPI_Request doorbell_send_ = MPI_REQUEST_NULL;
  uint64_t doorbell_out_ = 0;
  bool doorbell_sent_ = false;
  uint64_t start_out_ = 0;                // coordinator's outgoing start
  std::vector<MPI_Request> start_sends_;   // coordinator
};

}  // namespace chorus
