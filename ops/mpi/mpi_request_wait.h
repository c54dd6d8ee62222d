// Waiting for a non-blocking MPI request without burning a core: spin on
// MPI_Test (yielding the CPU between tests) for a short window, because
// peers in lockstep answer within microseconds, then sleep with exponential
// backoff, because a peer that is late is usually late by much more. Ranks
// are often oversubscribed on few cores, where a spinning waiter steals the
// CPU from the very peer it waits for.
#pragma once

#include <mpi.h>

#include <chrono>

#include "chorus/status.h"

namespace chorus {

struct WaitPolicy {
  std::chrono::microseconds spin{100};
  std::chrono::microseconds first_sleep{20};
  std::chrono::microseconds max_sleep{1000};
};

// Completes `request`; `what` names it in the error.
Status wait_for_request(MPI_Request* request, const char* what, const WaitPolicy& policy = {});

}  // namespace chorus
