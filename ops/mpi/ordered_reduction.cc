#include "ops/mpi/ordered_reduction.h"

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "ops/kernels/ordered_reduce.h"

namespace chorus {

bool needs_ordered_reduction(DataType dtype, ReduceOp op, int ranks, double factor) {
  if (!is_floating_point(dtype) || (op != ReduceOp::kSum && op != ReduceOp::kProduct)) return false;
  const bool half = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
  return ranks > 2 || (ranks == 2 && half && factor != 1.0);
}

bool prefer_ordered_reduction(int64_t bytes, int ranks) {
  return ranks > 1 && bytes >= kOrderedReductionMinBytes;
}

Status OrderedReduction::reduce_scatter(const void* input, void* output, const std::vector<int>& counts,
                                        const std::vector<int>& displs, DataType dtype, ReduceOp op,
                                        double factor) {
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
  sources_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    sources_[static_cast<size_t>(r)] = r == rank_ ? own : scratch_.data() + static_cast<size_t>(r) * block;
  }
  // The fold may write over this rank's own block (output == own, in place)
  // but not over part of it: a reducescatter in place on rank r > 0 leaves
  // its block at the start of the buffer, which can overlap where the block
  // was. Such a result goes through this rank's scratch slot, which the
  // exchange left unused.
  const auto out_at = reinterpret_cast<uintptr_t>(output);
  const auto own_at = reinterpret_cast<uintptr_t>(own);
  const bool overlaps = output != own && out_at < own_at + block && own_at < out_at + block;
  void* target = overlaps ? scratch_.data() + static_cast<size_t>(rank_) * block : output;
  // Every rank's copy of the block in rank order, in one pass: float16 and
  // bfloat16 accumulate in float32 and round once, after the factor, as the
  // shared-memory allreduce does (the same bits on either path).
  CHORUS_RETURN_IF_ERROR(
      reduce_ranks_in_order_to(ReducedOutput{target, factor}, sources_.data(), size_, mine, dtype, op));
  if (overlaps) std::memcpy(output, target, block);
  return Status::OK();
}

Status OrderedReduction::allreduce(const void* input, void* output, int count, DataType dtype, ReduceOp op,
                                   double factor) {
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
  CHORUS_RETURN_IF_ERROR(reduce_scatter(input, my_block, block_counts_, block_displs_, dtype, op, factor));
  const MPI_Datatype type = types_->datatype(dtype);
  return mpi_status("MPI_Allgatherv (ordered reduction)",
                    MPI_Allgatherv(MPI_IN_PLACE, 0, type, output, block_counts_.data(), block_displs_.data(),
                                   type, comm_));
}

}  // namespace chorus
