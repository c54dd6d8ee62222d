// Adasum (Maleki et al., "Scaling Distributed Training with Adaptive
// Summation", MLSys 2021) over an MPI communicator whose size is a power of
// two: ReduceOp::kAdasum, as Horovod's CPU Adasum computes it
// (horovod/common/ops/adasum/adasum.h, adasum_mpi.cc).
//
// Two gradients a and b combine as
//     a' = (1 - a.b / (2|a|^2)) a + (1 - a.b / (2|b|^2)) b,
// their sum when they are orthogonal and their average when they are equal;
// a side whose squared norm is below sqrt(DBL_MIN) keeps coefficient 1 (a
// zero gradient, a joined rank's, leaves the other unchanged). 2^k ranks
// combine as a binary tree over the ranks in order: pairs (0,1), (2,3), ...
// first, then ({0,1},{2,3}), ..., then the two halves of the job.
//
// Communication: recursive vector halving with distance doubling. At level
// L = 1, 2, 4, ..., size/2, rank r and its partner r^L hold the same part of
// the message (the whole of it at level 1): each sends the partner the half
// it gives up and receives the partner's copy of the half it keeps (the rank
// whose bit L is clear keeps the first half, of floor(n/2) elements). For
// its half it then holds a, the combination of its own group of L ranks,
// and b, the partner group's. The 2L ranks of the two groups hold disjoint
// slices of a and b that together make all of them, so each rank's partial
// dot products and squared norms, summed over those 2L ranks (recursive
// doubling with partners r^1, r^2, ..., r^L: pairwise additions, which are
// commutative, so every one of them gets the same bits and they combine
// their slices with the same coefficients), are those of the whole vectors.
// After the last level each rank holds 1/size of the result; the levels in
// reverse order send each slice back (recursive doubling allgather).
//
// A fusion buffer holds several gradients, and each is combined with its
// own dot products: the message comes with its tensors' sizes, and each
// level sums three numbers per tensor (a.b, the left group's |.|^2, the
// right group's), over the part of that tensor each rank holds.
//
// Arithmetic: dot products and norms accumulate in double; a' is computed
// in double and rounded to the dtype once per level. float16 and bfloat16
// messages are widened to float32 first and narrowed once at the end.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

class MpiAdasum {
 public:
  // `comm` (rank `rank` of `size`) must outlive this object; at most
  // `count_limit` elements go into one MPI call (longer transfers are split).
  MpiAdasum(MPI_Comm comm, int rank, int size, int64_t count_limit);

  // Collective over the communicator, every rank with the same counts and
  // dtype: replaces `buffer` (counts[i] elements of tensor i, one tensor
  // after another) with the Adasum of every rank's buffer, tensor by tensor,
  // times `factor`. dtype float16, bfloat16, float32 or float64.
  // InvalidArgument for another dtype, a size that is not a power of two or
  // a negative count; MPI errors as Internal("<call> failed: ...").
  Status reduce(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor);

 private:
  template <typename T>
  Status reduce_typed(T* data, const std::vector<int64_t>& counts, MPI_Datatype type, double factor);
  // Combines the slice [begin, end) of the message, `mine` (this rank's
  // group's) with `theirs` (the partner group's, at level `level`).
  template <typename T>
  Status combine(T* mine, const T* theirs, int64_t begin, int64_t end, const std::vector<int64_t>& counts,
                 int level);
  // Sends `send_count` elements to `partner` while receiving `recv_count`
  // from it, in pieces of at most count_limit_ elements.
  Status exchange(const void* send, int64_t send_count, void* recv, int64_t recv_count, MPI_Datatype type,
                  size_t element_size, int partner);
  // Sums `sums_` over the 2 * level ranks of this rank's group at `level`.
  Status sum_over_group(int level);

  MPI_Comm comm_;
  int rank_;
  int size_;
  int64_t count_limit_;
  std::vector<char> received_;        // the partner's copy of the half this rank keeps
  std::vector<float> widened_;        // a float16/bfloat16 message in float32
  std::vector<double> sums_;          // three per tensor
  std::vector<double> partner_sums_;  // a partner's, while summing
};

}  // namespace chorus
