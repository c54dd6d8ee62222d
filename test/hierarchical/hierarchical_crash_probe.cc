// hierarchical_crash_probe: one rank is killed (SIGKILL) at its cross-host
// step in the middle of a hierarchical allreduce over real hosts (network
// namespaces). Its local peers must fail promptly with an error naming it;
// as the runtime does after such an error, they then end the job
// (MPI_Abort), which also ends the ranks on the other host that are stuck
// in MPI with the dead rank (MPI does not return from a collective whose
// peer died). Run by run_crash_test.sh under mpirun with Open MPI's recovery
// on, so that the launcher does not end the job for the victim's death
// before the survivors can act on it: the job must end through them.
//
// Usage: hierarchical_crash_probe <victim rank> <cross-host step at which it dies>
// Prints "HIER_CRASH_CREATOR pid=<pid>" for each host's segment creator
// (local rank 0) and, for each rank that saw the death,
// "HIER_CRASH_SURVIVOR rank=<r> ok" or "... FAILED: <why>".
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/mpi/mpi_topology.h"
#include "ops/shm/hierarchical_allreduce.h"

namespace chorus {
namespace {

int run(int argc, char** argv) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    if (rank == 0) std::fprintf(stderr, "usage: hierarchical_crash_probe <victim rank> <step>\n");
    return 2;
  }
  const int victim = std::atoi(argv[1]);
  const int64_t fatal_step = std::atoll(argv[2]);
  Topology topology;
  Status status = discover_topology(MPI_COMM_WORLD, &topology);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, status.to_string().c_str());
    return 1;
  }
  std::vector<int> pids(static_cast<size_t>(size));
  std::vector<int> nodes(static_cast<size_t>(size));
  const int mine = getpid();
  MPI_Allgather(&mine, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Allgather(&topology.node, 1, MPI_INT, nodes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  if (topology.local_rank == 0) std::printf("HIER_CRASH_CREATOR pid=%d\n", mine);
  std::fflush(stdout);

  HierarchicalAllreduceOptions options;
  options.chunk_bytes = 64 << 10;
  // Far beyond the test's deadline: survivors must not need it.
  options.peer_timeout = std::chrono::milliseconds(300'000);
  options.before_cross_step = [&](int64_t step) {
    if (rank == victim && step == fatal_step) raise(SIGKILL);
    return Status::OK();
  };
  std::unique_ptr<HierarchicalAllreduce> algorithm;
  status = HierarchicalAllreduce::create(MPI_COMM_WORLD, topology.node, topology.local_rank, options, &algorithm);
  if (!status.ok()) {
    std::printf("HIER_CRASH_SURVIVOR rank=%d FAILED: setup failed: %s\n", rank, status.to_string().c_str());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::vector<float> data(64 * (64 << 10) / sizeof(float), 1.0f);  // 64 chunks
  const auto start = std::chrono::steady_clock::now();
  status = algorithm->allreduce(data.data(), data.data(), static_cast<int64_t>(data.size()), DataType::kFloat32,
                                ReduceOp::kSum);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The victim's local peers get here; the others wait in MPI (or for a
  // local peer that does) until the job ends, and get here only when the
  // job's end kills that local peer first.
  std::string failure;
  const std::string expected = "Shared-memory allreduce: rank " + std::to_string(victim) + " (pid " +
                               std::to_string(pids[static_cast<size_t>(victim)]) + ") exited while rank " +
                               std::to_string(rank) + " was waiting for it";
  if (status.ok()) {
    failure = "the allreduce succeeded although rank " + std::to_string(victim) + " was killed";
  } else if (nodes[static_cast<size_t>(victim)] != topology.node) {
    // Such a rank waits in MPI for the dead one until the job ends; the end
    // (the victim's local peer's MPI_Abort) may kill its own local peer
    // first, whose death it then reports: that is the teardown, not a wrong
    // outcome. Anything else is.
    const std::string teardown = "exited while rank " + std::to_string(rank) + " was waiting for it";
    if (status.message().find(teardown) != std::string::npos) {
      std::printf("HIER_CRASH_TEARDOWN rank=%d saw a local peer end with the job: %s\n", rank,
                  status.message().c_str());
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 3);
      return 3;
    }
    failure = "rank " + std::to_string(rank) + " on another host than the victim returned: " + status.to_string();
  } else if (status.message().find(expected) == std::string::npos || status.code() != StatusCode::kAborted) {
    failure = "unexpected error (wanted '" + expected + "'): " + status.to_string();
  }
  std::printf("rank %d: error after %.3f s: %s\n", rank, seconds, status.message().c_str());
  std::printf("HIER_CRASH_SURVIVOR rank=%d %s%s\n", rank, failure.empty() ? "ok" : "FAILED: ", failure.c_str());
  std::fflush(stdout);
  // What the runtime does with such an error: end the job, whose other
  // ranks may be waiting for this one or for the dead one.
  MPI_Abort(MPI_COMM_WORLD, 3);
  return 3;
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  return chorus::run(argc, argv);
}
