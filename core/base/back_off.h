// Back-off for waits that poll something the kernel cannot wake them on (a
// CUDA event, an NCCL communicator's asynchronous error): shared by the
// staged GPU backend and the NCCL backend.
#pragma once

#include <chrono>

namespace chorus {

// Sleeps `*next` (at least 50 us), then doubles it up to 1 ms: waits that
// react within microseconds to fast work and cost ~1000 wake-ups a second
// on slow work, without spinning on a core the peer ranks may need, and
// still see an abort within ~1 ms. Start with `*next` at zero.
void sleep_and_back_off(std::chrono::microseconds* next);

}  // namespace chorus
