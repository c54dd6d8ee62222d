// CycleTrigger: decides when the ranks run a negotiation cycle, so that idle
// ranks sleep instead of cycling. The coordinator (rank 0) is the clock: it
// starts a cycle when it has local work, when another rank asks for one, or
// when its timer (the stall inspector's next check) is due. The other ranks
// ask for a cycle when they have local work and otherwise just wait for the
// coordinator's start signal.
#pragma once

#include <chrono>
#include <functional>
#include <optional>

#include "chorus/status.h"
#include "wake_signal.h"

namespace chorus {

class CycleTrigger {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~CycleTrigger() = default;

  // Returns once every rank has started the next cycle. `has_local_work` is
  // asked whenever `wake` fires (and after every poll); `timer` matters only
  // on the coordinator.
  virtual Status wait_for_cycle(const std::function<bool()>& has_local_work, WakeSignal* wake,
                                std::optional<Clock::time_point> timer) = 0;
};

}  // namespace chorus
