// Element-wise reduction kernels for every dtype the runtime reduces. The MPI
// backend uses them for float16/bfloat16 (which MPI lacks); the shared-memory
// path and tests use them for all types.
#pragma once

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// inout[i] = op(inout[i], in[i]) for i < count. op is kSum, kMin, kMax or
// kProduct; float16/bfloat16 compute in float32 and round once. kBool and
// kAverage are invalid arguments.
Status reduce_into(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op);

}  // namespace chorus
