// Reduction of several ranks' buffers at once, in rank order.
//
// out[i] = ((in[0][i] op in[1][i]) op in[2][i]) ... op in[ranks-1][i]
//
// Every element is combined in the same order wherever it sits in the
// buffer, so a tensor reduced alone and the same tensor inside a fused buffer
// get bit-identical results, whatever the timing. The shared-memory
// allreduce and OrderedReduction (the MPI path for floating-point sums and
// products) both fold with it, so they agree bit for bit. float16 and
// bfloat16 accumulate in float32 over all ranks and round once at the end,
// which on 3 or more ranks is more accurate than rounding after every rank
// as a pairwise fold with reduce_into() (ops/kernels/reduce.h) would; on 2
// ranks both compute the same thing (a op b in float32, rounded once).
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
// owner of a share (shared memory, or OrderedReduction on MPI) scales it (an
// average's 1/size, a postscale) without a second pass over it. float32,
// float64 and the integers get the bits of a reduce followed by scale()
// (ops/kernels/scale.h). float16 and bfloat16 multiply the float32
// accumulation by the factor (as a float) and round to 16 bits once: a
// reduce followed by scale() would round the sum to 16 bits first and the
// product again, which can be one unit in the last place off the mean of
// the inputs (e.g. 1, 2^-11 and 0 in float16 average to 0.333251953125
// that way; one rounding gives 0.33349609375).
Status reduce_ranks_in_order_to(const ReducedOutput& to, const void* const* inputs, int ranks, int64_t count,
                                DataType dtype, ReduceOp op);

}  // namespace chorus
