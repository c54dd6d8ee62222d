#include "ops/mpi/mpi_request_wait.h"

#include <sched.h>

#include <thread>

#include "ops/mpi/mpi_context.h"

namespace chorus {

Status wait_for_request(MPI_Request* request, const char* what, const WaitPolicy& policy, const WaitWatch& watch) {
  using Clock = std::chrono::steady_clock;
  const auto spin_until = Clock::now() + policy.spin;
  auto sleep = policy.first_sleep;
  while (true) {
    int done = 0;
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    CHORUS_RETURN_IF_ERROR(mpi_status(what, rc));
    if (done) return Status::OK();
    const auto now = Clock::now();
    if (now < spin_until) {
      sched_yield();
      continue;
    }
    if (watch) CHORUS_RETURN_IF_ERROR(watch(now));
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, policy.max_sleep);
  }
}

}  // namespace chorus
