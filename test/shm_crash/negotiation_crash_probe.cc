// negotiation_crash_probe <gather|broadcast>: a rank is killed (SIGKILL)
// while the others wait for it inside the negotiation's MPI calls
// (MpiControllerTransport), which Open MPI, told not to end the job on a dead
// rank, would never complete. Run by run_shm_crash_test.sh like
// shm_crash_probe, with the same report lines.
//   gather     the last rank dies before its part of the gather: the
//              coordinator (rank 0) must name it; the others may have sent
//              theirs and finished, or must name it too.
//   broadcast  rank 0 (the coordinator) dies before it broadcasts: every
//              survivor must name it.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "crash_report.h"
#include "ops/mpi/mpi_controller_transport.h"

namespace chorus {
namespace {

int run(bool gather) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::vector<int> pids = share_pids(rank, size);
  MpiControllerTransport transport(MPI_COMM_WORLD, peers_of(rank, pids));
  std::string failure;
  // One negotiation with everybody alive first.
  std::vector<std::string> all;
  Status status = transport.gather_to_coordinator("rank " + std::to_string(rank), &all);
  std::string blob = rank == 0 ? "responses" : "";
  if (status.ok()) status = transport.broadcast_from_coordinator(&blob);
  if (!status.ok()) failure = "the first negotiation failed: " + status.to_string();
  if (failure.empty() && blob != "responses") failure = "the first broadcast delivered '" + blob + "'";
  MPI_Barrier(MPI_COMM_WORLD);

  const int victim = gather ? size - 1 : 0;
  if (rank == victim) raise(SIGKILL);
  if (failure.empty()) {
    const auto start = std::chrono::steady_clock::now();
    blob.clear();
    status = gather ? transport.gather_to_coordinator("again", &all) : transport.broadcast_from_coordinator(&blob);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string expected = "rank " + std::to_string(victim) + " (pid " + std::to_string(pids[static_cast<size_t>(victim)]) +
                                 ") exited while rank " + std::to_string(rank) + " was waiting in MPI_I" +
                                 (gather ? "gather" : "bcast");
    std::printf("rank %d: after %.3f s: %s\n", rank, seconds, status.to_string().c_str());
    if (gather && rank != 0 && status.ok()) {
      // A gather's non-root ranks may only send. This one stays alive a
      // while, so that the coordinator finds only the victim dead.
      sleep(2);
    } else {
      failure = wrong_crash_error(status, expected, "the call completed although rank " +
                                                        std::to_string(victim) + " was killed");
    }
  }
  report_survivor_and_exit(rank, failure);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 2 || (std::strcmp(argv[1], "gather") != 0 && std::strcmp(argv[1], "broadcast") != 0)) {
    std::fprintf(stderr, "usage: negotiation_crash_probe <gather|broadcast>\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return chorus::run(std::strcmp(argv[1], "gather") == 0);
}
