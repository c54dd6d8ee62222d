// CycleToken: which thread runs the runtime's cycles (negotiation, then the
// collectives): the background thread, or a framework thread that waits for
// a result.
//
// Handing a result between two threads costs a futex wake-up and a context
// switch each way, ~5 us apiece on a 2-vCPU VM where a rank's threads share
// a core: most of a small allreduce's submit-to-wait time
// (docs/MEASUREMENTS.md, "The waiting thread runs the cycle"). So a thread
// that blocks on a result, and finds the token free, takes it and runs the
// cycles itself until its result is done, as an MPI rank progresses its own
// collective. The background thread holds the token while it decides and
// runs; it lets go only while it yields the CPU between cycles, which is
// when a framework thread can be waiting. Finding the token taken, it parks
// (it does not yield back and forth with the waiter, which would cost the
// waiter a context switch per poll) and looks again after kFirstParkedCheck,
// backing off to kLongestParkedCheck while the waiter keeps the token. The
// waiter wakes it on leaving when it leaves work behind, or when it kept the
// token long enough for the park to have backed off.
//
// Waiters run cycles only where every backend runs on any thread (host
// memory: no GPU's current device to leave behind) and the trigger lets go
// of the token while it yields (the shared-memory trigger, one host). A
// waiter's result failed by a lost peer ends its waiting for the next cycle;
// one inside a collective whose peer dies fails with it where the wait
// watches the peers (shared memory), and inside an MPI call waits as the
// background thread would, until the heartbeat or the launcher ends the job.
#pragma once

#include <chrono>
#include <mutex>

#include "base/wake_signal.h"

namespace chorus {

class CycleToken {
 public:
  // A framework thread that waits: takes the token if free.
  bool try_take();
  // The waiter is done; `wake_background`: work remains that nobody waits
  // for (or the background thread must hear how the waiter's cycles ended).
  void hand_back(bool wake_background);

  // The background thread: takes the token, parking while a waiter has it.
  void take_for_background();
  // The background thread lets go while it yields the CPU.
  void release_by_background() { mutex_.unlock(); }
  // Ends a park at once (shutdown).
  void wake_background() { parked_.notify(); }

 private:
  using Clock = std::chrono::steady_clock;
  // How soon a parked background thread looks whether the waiter has left:
  // work enqueued after a waiter left without waking it waits for this at
  // most. Each look preempts whichever thread has the core: at 1 ms, about
  // once per reference-MLP step, that training looked a few percent slower
  // in alternated runs (docs/MEASUREMENTS.md, "The waiting thread runs the
  // cycle").
  static constexpr std::chrono::microseconds kFirstParkedCheck{4000};
  static constexpr std::chrono::microseconds kLongestParkedCheck{32000};

  std::mutex mutex_;
  WakeSignal parked_;
  Clock::time_point taken_at_;  // by the waiter holding the token
};

}  // namespace chorus
