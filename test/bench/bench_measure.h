// The measurements of chorus_bench. Every timed round starts with a barrier
// on the benchmark's own communicator; each rank times its own call, and the
// sample of a round is the maximum over ranks. Chorus and raw MPI alternate
// (A B A B ...) on the same, already touched buffers.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "bench_options.h"
#include "bench_util.h"
#include "chorus/chorus.h"

namespace chorus_bench {

struct AllreduceRow {
  size_t bytes = 0;
  Stats chorus;  // allreduce_async(...).wait(), in place
  Stats mpi;     // MPI_Allreduce(MPI_IN_PLACE, ...)
  // Rank 0 alone memcpy()s `bytes` from the buffer into a scratch buffer:
  // the one-core copy bandwidth the allreduce is held against. Like the
  // allreduces, it starts from a buffer just written by its rank.
  Stats memcpy;
  // The same copy straight after it, from a source the copy has just read:
  // the faster figure, shown beside the ceiling.
  Stats memcpy_warm;
};

// The sweep on a process set: the world's allreduce and the set's (its
// members only; the others wait at the round's barrier), alternating.
struct ProcessSetRow {
  size_t bytes = 0;
  Stats world;
  Stats set;
};

struct SmallStepResult {
  int tensors = 200;
  size_t bytes_each = 4096;
  Stats chorus;        // 200 x allreduce_async, then 200 x wait
  Stats mpi_separate;  // 200 x MPI_Allreduce
  Stats mpi_fused;     // pack into one buffer, one MPI_Allreduce, unpack
};

struct LatencyResult {
  size_t bytes = 4096;
  Stats chorus;  // submit to wait
  Stats mpi;
};

// Rank 0 holds every rank's figures. The process figure counts every thread
// (the main thread's own wake-up at the end of the window, Open MPI's
// threads); the background figure counts Chorus's background thread alone.
struct IdleResult {
  bool measured = false;
  double seconds = 0.0;
  std::vector<double> percent_per_rank;  // process CPU time / wall time x 100
  double max_percent = 0.0;
  std::vector<double> background_percent_per_rank;  // background thread's CPU time / wall time x 100
  double background_max_percent = 0.0;
  std::vector<double> background_wakeups_per_rank;  // times the background thread ran (context switches)
  double background_max_wakeups = 0.0;
  // The heartbeat's thread ("chorus-hb"), the same way; -1 where it does not
  // run (CHORUS_HEARTBEAT_TIMEOUT_SECONDS=0).
  std::vector<double> heartbeat_percent_per_rank;
  double heartbeat_max_percent = 0.0;
  std::vector<double> heartbeat_wakeups_per_rank;
  double heartbeat_max_wakeups = 0.0;
};

class Bench {
 public:
  // `comm` is a communicator of the benchmark's own (a duplicate of
  // MPI_COMM_WORLD), so its raw MPI calls never share one with Chorus.
  Bench(MPI_Comm comm, const Options& options);

  // Allocates and touches every buffer, checks one Chorus allreduce of each
  // against the expected sums (a wrong result makes every figure
  // meaningless), then zeroes the buffers. False with `error` on any rank's
  // mismatch (the same answer on every rank).
  bool prepare(std::string* error);

  std::vector<AllreduceRow> allreduce_sweep();
  // Collective over every rank: `set` (of `members`) exists on all.
  std::vector<ProcessSetRow> process_set_sweep(const chorus::ProcessSet& set, const std::vector<int>& members);
  SmallStepResult small_tensors_step();
  LatencyResult latency();
  IdleResult idle_cpu();

 private:
  // Runs `warmup` untimed and `repeats` timed rounds; each round runs every
  // variant once, in order, each after before_each(its index) (untimed, if
  // given) and a barrier. Returns one Stats per variant.
  std::vector<Stats> alternate(int warmup, int repeats,
                               const std::vector<std::function<void()>>& variants,
                               const std::function<void(size_t)>& before_each = nullptr);
  void mpi_allreduce(float* data, size_t count);

  MPI_Comm comm_;
  Options options_;
  int rank_ = 0;
  int size_ = 1;
  chorus::AllreduceOptions sum_;

  std::vector<std::vector<float>> sweep_buffers_;  // one per size
  std::vector<float> copy_target_;                 // rank 0: the largest size, for the memcpy figure
  std::vector<chorus::Tensor> sweep_tensors_;
  std::vector<std::string> sweep_names_;
  std::vector<std::vector<float>> small_buffers_;  // 200 x 4 KiB
  std::vector<chorus::Tensor> small_tensors_;
  std::vector<std::string> small_names_;
  std::vector<chorus::Handle> small_handles_;
  std::vector<float> fused_buffer_;                // 800 KiB, for the packed MPI variant
  std::vector<float> latency_buffer_;              // 4 KiB
  chorus::Tensor latency_tensor_;
  std::string latency_name_ = "bench.latency";
};

}  // namespace chorus_bench
