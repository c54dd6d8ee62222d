// MpiBackend: the collectives on host memory, one MPI collective each.
//
// MPI counts and displacements are C ints. allreduce and broadcast split
// larger buffers into chunks of at most `count_limit` elements (every chunk
// is an independent collective, so the result is the same); the other
// collectives cannot be split without changing their layout and return
// InvalidArgument naming the limit instead. These checks run on each rank's
// own arguments: for alltoallv a count over the limit is seen only by the
// two ranks it concerns, so the caller must keep counts within the limit
// everywhere (negotiation does) or the other ranks wait in MPI.
//
// MPI errors come back as Status::Internal("<MPI call> failed: <MPI error
// string>"): the constructor sets MPI_ERRORS_RETURN on the communicator.
// Not thread-safe: one thread (the background thread) drives a backend.
#pragma once

#include <mpi.h>

#include <climits>
#include <optional>
#include <cstdint>
#include <vector>

#include "ops/host_backend.h"
#include "ops/mpi/adasum.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/mpi/ordered_reduction.h"

namespace chorus {

class MpiBackend : public HostBackend {
 public:
  // `comm` and `types` (created) must outlive the backend. `count_limit`
  // lowers the per-call element limit below INT_MAX, for tests of chunking
  // and of the limit errors.
  MpiBackend(MPI_Comm comm, const MpiTypes* types, int64_t count_limit = INT_MAX);

  const char* name() const override { return "mpi"; }

  // Where the ordered path runs (ordered_reduction.h) the factor is applied
  // as each block is folded, so float16 and bfloat16 round once; float16 and
  // bfloat16 sums and products with a factor take that path on 2 ranks too.
  // Elsewhere the result is scaled after MPI's allreduce: one rounding for
  // min, max and one rank, the bits of a fold for float32 and float64.
  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override {
    return finished_work(run_allreduce(input, output, count, dtype, op, factor));
  }
  // A job of one rank: the allreduce of a fused message is each piece's
  // input times the factor, so the executor need not copy it into its fusion
  // buffer and back (two passes over every gradient of a step).
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override;
  WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                           double factor) override;
  // Adasum over this communicator (ops/mpi/adasum.h): a power-of-two
  // number of ranks.
  WorkPtr adasum(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor) override {
    return finished_work(run_adasum(buffer, counts, dtype, factor));
  }
  WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype) override {
    return finished_work(run_allgatherv(input, output, counts, dtype));
  }
  WorkPtr broadcast(void* buffer, int64_t bytes, int root) override {
    return finished_work(run_broadcast(buffer, bytes, root));
  }
  Status exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) override;
  WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                    const std::vector<int64_t>& recv_counts, DataType dtype) override {
    return finished_work(run_alltoallv(input, send_counts, output, recv_counts, dtype));
  }
  // Scales like allreduce().
  WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts, DataType dtype,
                        ReduceOp op, double factor) override {
    return finished_work(run_reducescatter(input, output, recv_counts, dtype, op, factor));
  }
  WorkPtr barrier() override { return finished_work(run_barrier()); }

 private:
  // The collectives, each finished when it returns.
  Status run_allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op, double factor);
  Status run_adasum(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor);
  Status run_allgatherv(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype);
  Status run_broadcast(void* buffer, int64_t bytes, int root);
  Status run_alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                       const std::vector<int64_t>& recv_counts, DataType dtype);
  Status run_reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                           DataType dtype, ReduceOp op, double factor);
  Status run_barrier();
  // OK when `dtype` has an MPI datatype; InvalidArgument otherwise.
  Status check_dtype(const char* collective, DataType dtype) const;
  // Also checks that `op` and `dtype` can be reduced.
  Status check_reduction(const char* collective, DataType dtype, ReduceOp op) const;
  // Only floating-point results can be scaled by a factor other than 1.
  Status check_factor(const char* collective, DataType dtype, double factor) const;
  // One count per rank, each in [0, count_limit_], and their running offsets
  // (displacements) within the limit too; fills `ints` and `displs`.
  Status to_mpi_counts(const char* collective, const char* what, const std::vector<int64_t>& counts,
                       std::vector<int>* ints, std::vector<int>* displs) const;

  MPI_Comm comm_;
  const MpiTypes* types_;
  int64_t count_limit_;
  int rank_ = 0;
  int size_ = 0;
  // A failure of the constructor's MPI calls, reported by every collective.
  Status init_status_;
  // Floating-point sums and products on 3+ ranks, so that fused and unfused
  // tensors get bit-identical results (see ordered_reduction.h); set once
  // rank and size are known.
  std::optional<OrderedReduction> ordered_;
  std::optional<MpiAdasum> adasum_;  // likewise
};

}  // namespace chorus
