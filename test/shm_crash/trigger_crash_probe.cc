// trigger_crash_probe: rank 0 is killed (SIGKILL) while the other ranks have
// asked it, through the shared-memory cycle trigger, to start a cycle; each
// of them must get an error naming rank 0 instead of waiting forever. Run by
// run_shm_crash_test.sh like shm_crash_probe, with the same report lines.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "crash_report.h"
#include "ops/shm/shm_cycle_trigger.h"
#include "ops/shm/shm_group.h"
#include "ops/mpi/mpi_setup_channel.h"

namespace chorus {
namespace {

int run() {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::vector<int> pids = share_pids(rank, size);

  std::unique_ptr<ShmGroup> group;
  MpiSetupChannel world(MPI_COMM_WORLD);
  Status status = ShmGroup::create(world, ShmCycleTrigger::data_bytes(size), std::chrono::milliseconds(60000),
                                   &group);
  std::string failure;
  if (!status.ok()) failure = "setup failed: " + status.to_string();
  if (failure.empty()) {
    ShmCycleTrigger trigger(std::move(group), 0.0, peers_of(rank, pids));
    const LocalWork work{[] { return true; }, [] { return uint64_t{1}; }, [] { return true; }};
    // One cycle with everybody alive first.
    status = trigger.wait_for_cycle(work, std::nullopt);
    if (!status.ok()) failure = "the first cycle failed: " + status.to_string();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) raise(SIGKILL);
    if (failure.empty()) {
      const auto start = std::chrono::steady_clock::now();
      status = trigger.wait_for_cycle(work, std::nullopt);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string expected = "rank 0 (pid " + std::to_string(pids[0]) + ") exited while rank " +
                                   std::to_string(rank) + " was waiting for it to start a negotiation cycle";
      failure = wrong_crash_error(status, expected, "a cycle started although rank 0 was killed");
      std::printf("rank %d: error after %.3f s: %s\n", rank, seconds, status.message().c_str());
    }
  }
  report_survivor_and_exit(rank, failure);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  return chorus::run();
}
