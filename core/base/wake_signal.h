// WakeSignal: how framework threads, and on one host the other ranks, wake
// the background thread. A futex word that every notify() bumps: notify()
// never blocks (an atomic add, and a syscall only while the waiter sleeps),
// and the waiter sleeps in the kernel instead of spinning.
//
// The word may live in memory shared by the ranks of a host (WakeWord in a
// segment): a peer's "start a cycle" or "I have work" then rings the same
// word as a local enqueue, and an idle rank can sleep without a timeout.
// Every wake-up of an idle process is charged CPU by the platform (growing
// with the memory it has used), so not waking at all is what keeps an idle
// rank's cost near zero. A sleeper chooses whether a peer's ring ends its
// sleep early (ShmCycleTrigger says when it does not want that).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace chorus {

// The futex word and its sleeper count; zero-filled memory is a valid one.
struct alignas(64) WakeWord {
  std::atomic<uint32_t> word;             // bumped by every ring
  std::atomic<uint32_t> sleepers;         // waiters inside (or about to enter) futex_wait
  std::atomic<uint32_t> peer_wakeable;    // those of them that ring_from_peer() wakes

  // Bumps the word and wakes a sleeping waiter; callable from any process
  // that maps the word.
  void ring();
  // Bumps the word, but wakes the waiter only if it sleeps with
  // `woken_by_peers`; otherwise it sees the ring when its timeout ends.
  void ring_from_peer();
};

class WakeSignal {
 public:
  using Clock = std::chrono::steady_clock;

  // Waits on a word of its own.
  WakeSignal();
  // Waits on `shared` (zero-filled before first use, in memory other
  // processes map and ring), which must outlive this signal.
  explicit WakeSignal(WakeWord* shared);
  WakeSignal(const WakeSignal&) = delete;
  WakeSignal& operator=(const WakeSignal&) = delete;

  void notify() { word_->ring(); }

  // Sleeps until the word moves on from where the last wait left it (any
  // ring since then), or until `deadline` (forever without one). A ring from
  // a peer ends the sleep early only with `woken_by_peers`. Returns whether
  // it was rung. One waiting thread only.
  bool wait_until(std::optional<Clock::time_point> deadline, bool woken_by_peers = true);

 private:
  WakeWord own_{};
  WakeWord* word_;
  uint32_t consumed_;
};

}  // namespace chorus
