#include "ops/mpi/ordered_reduction.h"

#include <climits>
#include <cstring>
#include <string>

#include "ops/kernels/reduce.h"

namespace chorus {

bool needs_ordered_reduction(DataType dtype, ReduceOp op, int ranks) {
  return ranks > 2 && is_floating_point(dtype) && (op == ReduceOp::kSum || op == ReduceOp::kProduct);
}

bool prefer_ordered_reduction(int64_t bytes, int ranks) {
  return ranks > 1 && bytes >= kOrderedReductionMinBytes;
}

Status OrderedReduction::reduce_scatter(const void* input, void* output, const std::vector<int>& counts,
                                        const std::vector<int>& displs, DataType dtype, ReduceOp op) {
  const size_t esize = dtype_size(dtype);
  const int mine = counts[rank_];
  const size_t block = static_cast<size_t>(mine) * esize;
  // Receive every other rank's copy of this rank's block; this rank's own
  // copy is read from `input` where it is.
  scratch_.resize(block * size_);
  send_counts_.assign(counts.begin(), counts.end());
  send_counts_[rank_] = 0;
  recv_counts_.assign(size_, mine);
  recv_counts_[rank_] = 0;
  if (static_cast<int64_t>(mine) * size_ > INT_MAX) {
    return Status::InvalidArgument("reducescatter: this rank's block of " + std::to_string(mine) +
                                   " elements times " + std::to_string(size_) +
                                   " ranks exceeds the MPI limit of " + std::to_string(INT_MAX) + " elements");
  }
  recv_displs_.resize(size_);
  for (int r = 0; r < size_; ++r) recv_displs_[r] = r * mine;
  const MPI_Datatype type = types_->datatype(dtype);
  CHORUS_RETURN_IF_ERROR(mpi_status(
      "MPI_Alltoallv (ordered reduction)",
      MPI_Alltoallv(input, send_counts_.data(), displs.data(), type, scratch_.data(), recv_counts_.data(),
                    recv_displs_.data(), type, comm_)));
  if (mine == 0) return Status::OK();
  const char* own = static_cast<const char*>(input) + static_cast<size_t>(displs[rank_]) * esize;
  auto source = [&](int r) -> const void* { return r == rank_ ? own : scratch_.data() + r * block; };
  if (rank_ == 0) {
    // x0 is this rank's own block: fold straight into the output.
    if (output != own) std::memmove(output, own, block);
    for (int r = 1; r < size_; ++r) CHORUS_RETURN_IF_ERROR(reduce_into(output, source(r), mine, dtype, op));
    return Status::OK();
  }
  if (rank_ == 1) {
    // x1 op x0 equals x0 op x1 bit for bit (the ops are commutative), so
    // rank 1 too folds straight into the output, which may be its own block.
    if (output != own) std::memmove(output, own, block);
    CHORUS_RETURN_IF_ERROR(reduce_into(output, source(0), mine, dtype, op));
    for (int r = 2; r < size_; ++r) CHORUS_RETURN_IF_ERROR(reduce_into(output, source(r), mine, dtype, op));
    return Status::OK();
  }
  // The output may be this rank's own block (in place), which is still
  // needed when the fold reaches this rank: accumulate in x0's slot.
  char* accumulator = scratch_.data();
  for (int r = 1; r < size_; ++r) CHORUS_RETURN_IF_ERROR(reduce_into(accumulator, source(r), mine, dtype, op));
  std::memcpy(output, accumulator, block);
  return Status::OK();
}

Status OrderedReduction::allreduce(const void* input, void* output, int count, DataType dtype, ReduceOp op) {
  block_counts_.resize(size_);
  block_displs_.resize(size_);
  int offset = 0;
  for (int r = 0; r < size_; ++r) {
    block_counts_[r] = count / size_ + (r < count % size_ ? 1 : 0);
    block_displs_[r] = offset;
    offset += block_counts_[r];
  }
  const size_t esize = dtype_size(dtype);
  char* my_block = static_cast<char*>(output) + static_cast<size_t>(block_displs_[rank_]) * esize;
  CHORUS_RETURN_IF_ERROR(reduce_scatter(input, my_block, block_counts_, block_displs_, dtype, op));
  const MPI_Datatype type = types_->datatype(dtype);
  return mpi_status("MPI_Allgatherv (ordered reduction)",
                    MPI_Allgatherv(MPI_IN_PLACE, 0, type, output, block_counts_.data(), block_displs_.data(),
                                   type, comm_));
}

}  // namespace chorus
