// Reduction of several ranks' buffers at once, in rank order.
//
// out[i] = ((in[0][i] op in[1][i]) op in[2][i]) ... op in[ranks-1][i]
//
// Every element is combined in the same order wherever it sits in the
// buffer, so a tensor reduced alone and the same tensor inside a fused buffer
// get bit-identical results, whatever the timing. For float32, float64 and
// the integer types this is also bit for bit what OrderedReduction (the MPI
// path, which folds pairwise in rank order) computes. float16 and bfloat16
// accumulate in float32 over all ranks and round once at the end, which on
// 3 or more ranks is more accurate than rounding after every rank (and so
// can differ in the last bit from the pairwise MPI path).
#pragma once

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// `inputs` holds `ranks` (>= 1) pointers to `count` elements each. `out` may
// be one of the inputs (the same address, not a partial overlap). op is
// kSum, kMin, kMax or kProduct; kBool and kAverage are invalid arguments.
Status reduce_ranks_in_order(void* out, const void* const* inputs, int ranks, int64_t count,
                             DataType dtype, ReduceOp op);

// Where reduce_ranks_in_order_to() puts the result.
struct ReducedOutput {
  void* out;               // may be one of the inputs, as above
  double factor = 1.0;     // the result times this; anything but 1 only for floating-point dtypes
};

// reduce_ranks_in_order(), multiplied by `factor` in the same pass: the
// shared-memory allreduce's owner of a share scales it (an average) without
// a second pass over it. The bits are those of a reduce followed by scale()
// (ops/kernels/scale.h): float16 and bfloat16 round the reduced value, widen
// it, multiply in float32 and round again, as scale() does.
Status reduce_ranks_in_order_to(const ReducedOutput& to, const void* const* inputs, int ranks, int64_t count,
                                DataType dtype, ReduceOp op);

}  // namespace chorus
