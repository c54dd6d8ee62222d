#include "ops/shm/shm_cycle_trigger.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <string>


namespace chorus {

// 128-byte lines: adjacent-line prefetch makes 64-byte neighbours share
// traffic on x86.
struct alignas(128) ShmCycleTrigger::Header {
  std::atomic<uint64_t> started;  // cycles rank 0 has started; written by rank 0 only
};
struct alignas(128) ShmCycleTrigger::RankSlot {
  WakeWord wake;                   // rung by this rank's framework threads and by its peers
  std::atomic<uint64_t> doorbell;  // 1 + the last cycle this rank asked for; 0: none yet
};

namespace {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory doorbells need lock-free atomics");

// For this long after a cycle starts, and after asking for one, wait by
// yielding the CPU instead of sleeping: in a training loop the next step's
// work comes within it, and a thread that stays runnable costs nothing to
// resume, while a futex wake-up costs the waker a syscall and the woken
// thread preempts the framework thread mid-step (docs/MEASUREMENTS.md,
// "Waking between steps").
constexpr std::chrono::microseconds kSpin{2000};
// Then sleep with a backoff that doubles from kFirstSleep, as the MPI
// trigger polls: while it lasts a peer's ring does not wake this rank; the
// sleep ending does. Waking peers at once made the oversubscribed step
// slower: each early wake-up of a rank that was not ready yet took a core
// from one that was (docs/MEASUREMENTS.md, "Ringing peers during a backoff").
constexpr std::chrono::microseconds kFirstSleep{20};
// A rank that asked for a cycle backs off up to this; then it waits for the
// start in sleeps of one liveness interval that the start ends at once.
constexpr std::chrono::microseconds kAskingMaxSleep{4000};
// A doorbell while rank 0 has nothing in flight cannot complete a
// collective (each needs rank 0's part), only pass on news such as a rank's
// shutdown: rank 0 waits for its own work, or this long, before starting a
// cycle for it. When ranks share cores, starting at once ran more cycles
// per training step, each with every rank taking part (docs/MEASUREMENTS.md,
// "A lone doorbell").
constexpr std::chrono::milliseconds kLoneDoorbellDelay{5};
// A rank with nothing asked for backs off until its sleeps reach this, ~40 ms
// after its last activity; then it sleeps until rung, and from then on a
// peer's ring wakes it at once.
constexpr std::chrono::microseconds kIdleMaxSleep{32000};

}  // namespace

size_t ShmCycleTrigger::data_bytes(int ranks) {
  return sizeof(Header) + sizeof(RankSlot) * static_cast<size_t>(ranks);
}

ShmCycleTrigger::ShmCycleTrigger(std::unique_ptr<ShmGroup> group, double min_interval_ms, LocalPeers peers)
    : group_(std::move(group)),
      header_(reinterpret_cast<Header*>(group_->data())),
      peers_(std::move(peers)),
      min_interval_(min_interval_ms) {
  wake_ = std::make_unique<WakeSignal>(&slot(group_->rank()).wake);
}

ShmCycleTrigger::RankSlot& ShmCycleTrigger::slot(int rank) const {
  return reinterpret_cast<RankSlot*>(group_->data() + sizeof(Header))[rank];
}

Status ShmCycleTrigger::wait_for_cycle(const LocalWork& work, std::optional<Clock::time_point> timer) {
  backoff_ = kFirstSleep;
  return group_->rank() == 0 ? coordinator_wait(work, timer) : worker_wait(work);
}

bool ShmCycleTrigger::doorbell_rang() const {
  for (int r = 1; r < group_->size(); ++r) {
    if (slot(r).doorbell.load(std::memory_order_acquire) > next_cycle_) return true;
  }
  return false;
}

void ShmCycleTrigger::wait_a_while(const LocalWork& work, Clock::time_point now,
                                   std::optional<Clock::time_point> timer, bool watching) {
  if (now < spin_until_) {
    work.before_yield();
    sched_yield();
    work.after_yield();
    return;
  }
  if (backoff_ >= kIdleMaxSleep) {
    if (watching) {
      const auto check_due = now + LocalPeers::longest_sleep();
      timer = timer ? std::min(*timer, check_due) : check_due;
    }
    wake_->wait_until(timer, /*woken_by_peers=*/true);
    return;
  }
  auto deadline = now + backoff_;
  if (timer) deadline = std::min(deadline, *timer);
  backoff_ = wake_->wait_until(deadline, /*woken_by_peers=*/false) ? kFirstSleep : backoff_ * 2;
}

Status ShmCycleTrigger::coordinator_wait(const LocalWork& work, std::optional<Clock::time_point> timer) {
  std::optional<Clock::time_point> lone_doorbell_due;
  while (true) {
    if (work.stop_waiting()) return no_cycle_started();
    const bool local = work.pending();
    const auto now = Clock::now();
    bool requested = local || (timer && now >= *timer);
    if (!requested && doorbell_rang()) {
      if (work.in_flight()) {
        requested = true;
      } else {
        if (!lone_doorbell_due) lone_doorbell_due = now + kLoneDoorbellDelay;
        requested = now >= *lone_doorbell_due;
      }
    }
    if (requested) {
      before_cycle_start(work, local, last_start_, min_interval_);
      break;
    }
    auto wake_at = timer;
    if (lone_doorbell_due && (!wake_at || *lone_doorbell_due < *wake_at)) wake_at = lone_doorbell_due;
    // With collectives in flight the next cycle needs the others' parts.
    const bool watching = work.in_flight();
    CHORUS_RETURN_IF_ERROR(watch_peers(watching, now));
    wait_a_while(work, now, wake_at, watching);
  }
  last_start_ = Clock::now();
  spin_until_ = last_start_ + kSpin;
  header_->started.store(next_cycle_ + 1, std::memory_order_release);
  for (int r = 1; r < group_->size(); ++r) slot(r).wake.ring_from_peer();
  ++next_cycle_;
  return Status::OK();
}

Status ShmCycleTrigger::worker_wait(const LocalWork& work) {
  while (true) {
    if (work.stop_waiting()) return no_cycle_started();
    // Local work first, even when the cycle has started: a burst still being
    // enqueued joins this cycle whole, not a few tensors at a time.
    if (!doorbell_sent_ && work.pending()) {
      settle_burst(work);
      if (header_->started.load(std::memory_order_acquire) <= next_cycle_) {
        slot(group_->rank()).doorbell.store(next_cycle_ + 1, std::memory_order_release);
        slot(0).wake.ring_from_peer();
      }
      doorbell_sent_ = true;
      spin_until_ = Clock::now() + kSpin;
    }
    const uint64_t started = header_->started.load(std::memory_order_acquire);
    if (started > next_cycle_) {
      // Rank 0 cannot start the cycle after this one before this rank has
      // taken part in this one's negotiation.
      if (started != next_cycle_ + 1) {
        return Status::Internal("cycle trigger out of step: expected cycle " + std::to_string(next_cycle_) +
                                ", rank 0 started " + std::to_string(started - 1));
      }
      break;
    }
    const auto now = Clock::now();
    // Waiting for rank 0 to start the cycle this rank asked for, or for the
    // others' parts of its collectives in flight.
    const bool watching = doorbell_sent_ || work.in_flight();
    CHORUS_RETURN_IF_ERROR(watch_peers(watching, now));
    if (!doorbell_sent_ || now < spin_until_ || backoff_ < kAskingMaxSleep) {
      wait_a_while(work, now, std::nullopt, watching);
    } else {
      wake_->wait_until(now + LocalPeers::longest_sleep(), /*woken_by_peers=*/true);
    }
  }
  spin_until_ = Clock::now() + kSpin;
  ++next_cycle_;
  doorbell_sent_ = false;
  return Status::OK();
}

Status ShmCycleTrigger::watch_peers(bool watching, Clock::time_point now) {
  return peers_.watch(watching, now, waiting_for_a_cycle(group_->rank() != 0 && doorbell_sent_));
}

}  // namespace chorus
