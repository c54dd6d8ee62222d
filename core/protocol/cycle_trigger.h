// CycleTrigger: decides when the ranks run a negotiation cycle, so that idle
// ranks sleep instead of cycling. The coordinator (rank 0) is the clock: it
// starts a cycle when it has local work, when another rank asks for one, or
// when its timer (the stall inspector's next check) is due. The other ranks
// ask for a cycle when they have local work and otherwise just wait for the
// coordinator's start signal.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <thread>

#include "chorus/status.h"
#include "base/wake_signal.h"

namespace chorus {

// What the trigger needs to know about this rank's own work.
struct LocalWork {
  std::function<bool()> pending;        // something to negotiate
  std::function<uint64_t()> arrivals;   // grows with every enqueue
  std::function<bool()> caller_waits;   // a framework thread is blocked on a result
  // This rank has collectives waiting for other ranks (its part of them is
  // enqueued). A cycle can complete another rank's collective only then.
  std::function<bool()> in_flight = [] { return true; };
  // Called around each sched_yield() between cycles: the background thread
  // lets a framework thread that waits for a result run cycles meanwhile
  // (runtime/cycle_token.h). after_yield() may return much later, with the
  // trigger's cycles moved on by the ones run meanwhile.
  std::function<void()> before_yield = [] {};
  std::function<void()> after_yield = [] {};
  // A thread that runs cycles for its own result stops waiting for the
  // next one once the result is done without it (failed by a lost peer):
  // wait_for_cycle() then returns kInProgress with no cycle started.
  std::function<bool()> stop_waiting = [] { return false; };
};

// What wait_for_cycle() returns when `stop_waiting` ended the wait.
inline Status no_cycle_started() { return Status::InProgress("no cycle started: the waiter's result is done"); }

// A framework thread usually enqueues a burst (the gradients of a backward
// pass, a loop of allreduce_async calls) and wakes the background thread
// with its first tensor. Starting the cycle at once would negotiate that one
// tensor alone while the producer, competing with us for the CPU, slows
// down. So wait, yielding, while the burst is still growing: until no tensor
// arrived for `quiet`, or `longest` has passed. A lone tensor pays `quiet`.
// A burst is over once its producer blocks on a result (the end of a backward
// pass: synchronize()); waiting out `quiet` then would only delay it, where
// the background thread mostly gets a core only once the producer blocks
// (docs/MEASUREMENTS.md, "Settling a burst"). Any
// blocked framework thread ends the wait: with several producers that may
// negotiate a burst in two cycles, never wrongly.
inline void settle_burst(const LocalWork& work, std::chrono::microseconds quiet = std::chrono::microseconds(4),
                         std::chrono::microseconds longest = std::chrono::microseconds(200)) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last_change = start;
  uint64_t seen = work.arrivals();
  for (auto now = start; now - last_change < quiet && now - start < longest && !work.caller_waits();
       now = Clock::now()) {
    sched_yield();
    const uint64_t count = work.arrivals();
    if (count != seen) {
      seen = count;
      last_change = Clock::now();
    }
  }
}

// Rank 0, once it has decided to start a cycle: lets a burst of its own
// enqueues finish (when the cycle is for local work), then keeps the
// minimum interval since the previous start.
inline void before_cycle_start(const LocalWork& work, bool local_work,
                               std::chrono::steady_clock::time_point previous_start,
                               std::chrono::duration<double, std::milli> min_interval) {
  if (local_work) settle_burst(work);
  const auto earliest =
      previous_start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(min_interval);
  if (std::chrono::steady_clock::now() < earliest) std::this_thread::sleep_until(earliest);
}

class CycleTrigger {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~CycleTrigger() = default;

  // What framework threads notify when they enqueue work (or ask the
  // background thread to stop); the trigger sleeps on it.
  virtual WakeSignal* wake_signal() = 0;
  // Returns once every rank has started the next cycle. `work` is asked
  // whenever the wake signal fires (and after every poll); `timer` matters
  // only on the coordinator.
  virtual Status wait_for_cycle(const LocalWork& work, std::optional<Clock::time_point> timer) = 0;
  // Whether a framework thread that waits for a result may run cycles
  // itself (runtime/cycle_token.h): the trigger's waits then call
  // LocalWork's before_yield/after_yield around their yields and end on
  // its stop_waiting.
  virtual bool lets_waiters_run_cycles() const { return false; }
  // The minimum time between the starts of two cycles (CHORUS_CYCLE_TIME_MS),
  // changed by the autotuner from the background thread between cycles.
  virtual void set_min_interval_ms(double ms) = 0;
};

}  // namespace chorus
