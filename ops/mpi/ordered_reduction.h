// OrderedReduction: floating-point sums and products whose result does not
// depend on how the elements were laid out.
//
// Floating-point addition is not associative. MPI picks its algorithm by
// message size and combines an element's operands in an order that depends
// on the element's position in the message, so on 3 or more ranks a tensor
// reduced alone and the same tensor reduced inside a fused buffer can differ
// in the last bits. Here every element is combined in rank order
// ((x0 op x1) op x2) ... whatever its position: each rank receives its block
// of the buffer from every rank (one MPI_Alltoallv) and folds them in rank
// order with the shared-memory allreduce's kernel (reduce_ranks_in_order_to),
// multiplying by the result's factor in the same pass, so both paths give the
// same bits and float16/bfloat16 are rounded once; an allreduce then shares
// the blocks (MPI_Allgatherv). The traffic is that of a ring reduce-scatter
// plus allgather. On 2 ranks every order is the same (x0 op x1 == x1 op x0),
// so MPI's own algorithms are used there for small messages, unless a 16-bit
// result needs a factor (see needs_ordered_reduction).
//
// Large messages take this path on any number of ranks for another reason:
// Open MPI's allreduce allocates a temporary buffer the size of the message
// on every call. From the background thread that allocation comes from a
// thread arena, which cannot hold 64 MiB, so glibc maps fresh memory each
// time, and first-touching it costs more than the reduction
// (docs/MEASUREMENTS.md, "First touch of fresh memory").
// This path reuses one persistent scratch buffer instead.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

// True when MPI's result could depend on the layout: floating-point sum or
// product on more than 2 ranks. Also float16/bfloat16 sums and products on 2
// ranks whose result is multiplied by a `factor` other than 1 (an average, a
// postscale): MPI's op rounds a op b to 16 bits and a scale afterwards would
// round again, where this path multiplies the float32 result and rounds once.
// Without a factor MPI's op rounds once too, with the same bits as this
// path, and one MPI_Allreduce costs less than an exchange and an allgather.
bool needs_ordered_reduction(DataType dtype, ReduceOp op, int ranks, double factor = 1.0);
// Messages from this size on take the ordered path to avoid MPI's per-call
// temporary allocation.
constexpr int64_t kOrderedReductionMinBytes = 4 << 20;
bool prefer_ordered_reduction(int64_t bytes, int ranks);

class OrderedReduction {
 public:
  OrderedReduction(MPI_Comm comm, const MpiTypes* types, int rank, int size)
      : comm_(comm), types_(types), rank_(rank), size_(size) {}

  // `input` holds counts[r] elements for each rank r at displs[r]; this
  // rank's reduced block, times `factor` (floating-point dtypes only), goes
  // to `output` (which may equal input). The factor is applied in the fold
  // itself: float16 and bfloat16 results are rounded once (see
  // ops/kernels/ordered_reduce.h).
  Status reduce_scatter(const void* input, void* output, const std::vector<int>& counts,
                        const std::vector<int>& displs, DataType dtype, ReduceOp op, double factor = 1.0);
  // count <= INT_MAX; input may equal output.
  Status allreduce(const void* input, void* output, int count, DataType dtype, ReduceOp op,
                   double factor = 1.0);

 private:
  MPI_Comm comm_;
  const MpiTypes* types_;
  int rank_;
  int size_;
  std::vector<char> scratch_;  // every rank's copy of this rank's block; reused
  std::vector<int> block_counts_, block_displs_;  // allreduce's split of the buffer
  std::vector<int> send_counts_, recv_counts_, recv_displs_;
  std::vector<const void*> sources_;  // the fold's inputs, in rank order
};

}  // namespace chorus
