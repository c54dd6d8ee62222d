// shm_crash_probe: one rank is killed (SIGKILL) in the middle of a
// shared-memory allreduce; every other rank must get an error naming the
// dead rank instead of hanging, and no segment may be left in /dev/shm.
// Run by run_shm_crash_test.sh under mpirun with Open MPI's recovery on, so
// that the launcher does not kill the survivors before they can report.
//
// Usage: shm_crash_probe <victim rank> <chunk after which it dies>
// Prints one line per surviving rank: "SHM_CRASH_SURVIVOR rank=<r> ok" or
// "... FAILED: <why>", and rank 0's pid as "SHM_CRASH_CREATOR pid=<pid>".
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "crash_report.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"
#include "ops/mpi/mpi_setup_channel.h"

namespace chorus {
namespace {

class KillingAllreduce : public ShmAllreduce {
 public:
  KillingAllreduce(ShmGroup* group, int64_t chunk_bytes, bool victim, int64_t fatal_chunk)
      : ShmAllreduce(group, ShmAllreduceOptions{chunk_bytes}), victim_(victim), fatal_chunk_(fatal_chunk) {}

 protected:
  void chunk_copied_in(int64_t chunk) override {
    if (victim_ && chunk == fatal_chunk_) raise(SIGKILL);
  }

 private:
  bool victim_;
  int64_t fatal_chunk_;
};

int run(int argc, char** argv) {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 3) {
    if (rank == 0) std::fprintf(stderr, "usage: shm_crash_probe <victim rank> <chunk>\n");
    return 2;
  }
  const int victim = std::atoi(argv[1]);
  const int64_t fatal_chunk = std::atoll(argv[2]);
  const std::vector<int> pids = share_pids(rank, size);

  constexpr int64_t kChunk = 4096;
  std::unique_ptr<ShmGroup> group;
  MpiSetupChannel world(MPI_COMM_WORLD);
  Status status = ShmGroup::create(world, ShmAllreduce::data_bytes(size, kChunk),
                                   std::chrono::milliseconds(60000), &group);
  std::string failure;
  if (!status.ok()) failure = "setup failed: " + status.to_string();
  if (failure.empty()) {
    KillingAllreduce algorithm(group.get(), kChunk, rank == victim, fatal_chunk);
    std::vector<float> data(64 * kChunk / sizeof(float), 1.0f);  // 64 chunks
    const auto start = std::chrono::steady_clock::now();
    status = algorithm.allreduce(data.data(), data.data(), static_cast<int64_t>(data.size()), DataType::kFloat32,
                                 ReduceOp::kSum);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string expected = "rank " + std::to_string(victim) + " (pid " +
                                 std::to_string(pids[static_cast<size_t>(victim)]) + ") exited while rank " +
                                 std::to_string(rank) + " was waiting for it";
    failure = wrong_crash_error(status, expected,
                                "the allreduce succeeded although rank " + std::to_string(victim) + " was killed");
    std::printf("rank %d: error after %.3f s: %s\n", rank, seconds, status.message().c_str());
    // A later call must fail at once with the same error, not wait again.
    const Status again = algorithm.allreduce(data.data(), data.data(), 1, DataType::kFloat32, ReduceOp::kSum);
    if (failure.empty() && again.message() != status.message()) failure = "a later call did not fail: " + again.to_string();
  }
  report_survivor_and_exit(rank, failure);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  return chorus::run(argc, argv);
}
