#include "ops/mpi/mpi_cycle_trigger.h"

#include <sched.h>

#include <algorithm>
#include <string>

#include "ops/mpi/mpi_context.h"
#include "ops/mpi/mpi_request_wait.h"

namespace chorus {
namespace {

constexpr int kDoorbellTag = 1;
constexpr int kStartTag = 2;
// Right after asking for a cycle the answer is on its way, so poll (yielding
// the CPU) for this long before backing off: see mpi_request_wait.h.
constexpr std::chrono::microseconds kSpin{2000};
constexpr std::chrono::microseconds kFirstSleep{20};
// A worker that has asked for a cycle polls for its start at most this
// rarely (the backoff doubles from kFirstSleep): it bounds the delay between
// the coordinator starting a cycle that can complete this rank's work and
// this rank joining it.
constexpr std::chrono::microseconds kMaxSleep{4000};
// A rank with nothing to negotiate polls at most this rarely. Any cycle it
// would join late cannot complete a collective (every collective needs this
// rank's own tensor, and this rank's own enqueue wakes it at once through the
// wake signal), so the bound is set by the idle CPU cost alone: each wake-up
// cost ~286 us of CPU here after large allocations (docs/MEASUREMENTS.md,
// "Idle wake-ups").
constexpr std::chrono::microseconds kIdleMaxSleep{32000};

}  // namespace

MpiCycleTrigger::MpiCycleTrigger(MPI_Comm comm, double min_interval_ms, LocalPeers peers)
    : comm_(comm), peers_(std::move(peers)), min_interval_(min_interval_ms) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiCycleTrigger::~MpiCycleTrigger() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (MPI_Request* request : {&doorbell_recv_, &start_recv_}) {
    if (*request != MPI_REQUEST_NULL) {
      // A posted receive that will never match now: cancel it.
      MPI_Cancel(request);
      MPI_Wait(request, MPI_STATUS_IGNORE);
    }
  }
  if (doorbell_send_ != MPI_REQUEST_NULL) MPI_Wait(&doorbell_send_, MPI_STATUS_IGNORE);
  if (!start_sends_.empty()) MPI_Waitall(static_cast<int>(start_sends_.size()), start_sends_.data(), MPI_STATUSES_IGNORE);
}

Status MpiCycleTrigger::wait_for_cycle(const LocalWork& work, std::optional<Clock::time_point> timer) {
  return rank_ == 0 ? coordinator_wait(work, timer) : worker_wait(work);
}

Status MpiCycleTrigger::drain_doorbells(bool* requested) {
  while (true) {
    if (doorbell_recv_ == MPI_REQUEST_NULL) {
      int rc = MPI_Irecv(&doorbell_in_, 1, MPI_UINT64_T, MPI_ANY_SOURCE, kDoorbellTag, comm_, &doorbell_recv_);
      CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Irecv (cycle doorbell)", rc));
    }
    int done = 0;
    int rc = MPI_Test(&doorbell_recv_, &done, MPI_STATUS_IGNORE);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Test (cycle doorbell)", rc));
    if (!done) return Status::OK();
    if (doorbell_in_ >= next_cycle_) *requested = true;
  }
}

Status MpiCycleTrigger::coordinator_wait(const LocalWork& work, std::optional<Clock::time_point> timer) {
  auto sleep = kFirstSleep;
  while (true) {
    const bool local = work.pending();
    bool requested = local;
    CHORUS_RETURN_IF_ERROR(drain_doorbells(&requested));
    const auto now = Clock::now();
    if (timer && now >= *timer) requested = true;
    if (requested) {
      before_cycle_start(work, local, last_start_, min_interval_);
      break;
    }
    // With collectives in flight the next cycle needs the others' parts.
    CHORUS_RETURN_IF_ERROR(peers_.watch(work.in_flight(), now, waiting_for_a_cycle(false)));
    auto deadline = now + sleep;
    if (timer) deadline = std::min(deadline, *timer);
    if (wake_.wait_until(deadline)) {
      sleep = kFirstSleep;
    } else {
      sleep = std::min(sleep * 2, kIdleMaxSleep);  // no local work: see kIdleMaxSleep
    }
  }
  last_start_ = Clock::now();
  // The previous cycle's start messages were matched long ago (every rank
  // took part in that cycle); this only releases their requests.
  if (!start_sends_.empty()) {
    int rc = MPI_Waitall(static_cast<int>(start_sends_.size()), start_sends_.data(), MPI_STATUSES_IGNORE);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Waitall (cycle start)", rc));
  }
  // One message to each rank rather than a broadcast tree: a tree would make
  // each inner rank forward the signal only when its own thread next polls.
  start_out_ = next_cycle_;
  start_sends_.assign(size_ - 1, MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) {
    int rc = MPI_Isend(&start_out_, 1, MPI_UINT64_T, r, kStartTag, comm_, &start_sends_[r - 1]);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Isend (cycle start)", rc));
  }
  ++next_cycle_;
  return Status::OK();
}

Status MpiCycleTrigger::worker_wait(const LocalWork& work) {
  if (start_recv_ == MPI_REQUEST_NULL) {
    int rc = MPI_Irecv(&start_in_, 1, MPI_UINT64_T, 0, kStartTag, comm_, &start_recv_);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Irecv (cycle start)", rc));
  }
  auto spin_until = Clock::time_point{};
  auto sleep = kFirstSleep;
  while (true) {
    if (!doorbell_sent_ && work.pending()) {
      settle_burst(work);
      if (doorbell_send_ != MPI_REQUEST_NULL) MPI_Wait(&doorbell_send_, MPI_STATUS_IGNORE);
      doorbell_out_ = next_cycle_;
      int rc = MPI_Isend(&doorbell_out_, 1, MPI_UINT64_T, 0, kDoorbellTag, comm_, &doorbell_send_);
      CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Isend (cycle doorbell)", rc));
      doorbell_sent_ = true;
      spin_until = Clock::now() + kSpin;
      sleep = kFirstSleep;
    }
    int done = 0;
    int rc = MPI_Test(&start_recv_, &done, MPI_STATUS_IGNORE);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Test (cycle start)", rc));
    if (done) break;
    const auto now = Clock::now();
    CHORUS_RETURN_IF_ERROR(
        peers_.watch(doorbell_sent_ || work.in_flight(), now, waiting_for_a_cycle(doorbell_sent_)));
    if (now < spin_until) {
      sched_yield();
    } else if (wake_.wait_until(now + sleep)) {
      sleep = kFirstSleep;
    } else {
      sleep = std::min(sleep * 2, doorbell_sent_ ? kMaxSleep : kIdleMaxSleep);
    }
  }
  if (start_in_ != next_cycle_) {
    return Status::Internal("cycle trigger out of step: expected cycle " + std::to_string(next_cycle_) +
                            ", coordinator started " + std::to_string(start_in_));
  }
  ++next_cycle_;
  doorbell_sent_ = false;
  return Status::OK();
}

}  // namespace chorus
