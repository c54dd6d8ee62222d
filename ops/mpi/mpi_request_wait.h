// Waiting for a non-blocking MPI request that is part of a cycle in
// progress: poll MPI_Test and yield the CPU between tests for a while, then
// sleep with exponential backoff. Inside a cycle every peer is on its way,
// so the wait is short when each rank has a core; when ranks are
// oversubscribed, yielding hands the core to the very peer we wait for,
// where a sleep would leave it idle for a whole timer tick. The sleeping
// phase bounds the CPU a rank burns when a peer is late for longer (a peer
// whose background thread was idle polls only every millisecond).
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>

#include "chorus/status.h"

namespace chorus {

struct WaitPolicy {
  std::chrono::microseconds spin{2000};
  std::chrono::microseconds first_sleep{50};
  std::chrono::microseconds max_sleep{1000};
};

// Called between the sleeps of a wait that outlasted its spin, with the
// time; an error ends the wait. A peer that died never completes its part
// of a collective, and MPI itself may never say so (Open MPI told not to end
// the job on a dead rank): a LocalPeers watch turns that into an error.
using WaitWatch = std::function<Status(std::chrono::steady_clock::time_point now)>;

// Completes `request`; `what` names it in the error. A `watch` error leaves
// the request pending: its buffers must outlive the job, which cannot go on.
Status wait_for_request(MPI_Request* request, const char* what, const WaitPolicy& policy = {},
                        const WaitWatch& watch = nullptr);

}  // namespace chorus
