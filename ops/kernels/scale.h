// Scaling kernels: prescale/postscale factors and the division of kAverage.
#pragma once

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// out[i] = in[i] * factor (in may equal out). Floating-point dtypes compute
// in their own precision (float16/bfloat16 in float32); integer dtypes by
// Horovod's rule, through double and truncated toward zero, saturating at
// the type's bounds (integer_scale.h), and only with a finite factor. bool:
// invalid argument unless factor == 1. A factor of 1 is a copy.
Status scale(const void* in, void* out, int64_t count, DataType dtype, double factor);

// buffer[i] /= divisor, truncating toward zero, for integer dtypes (the
// kAverage of integer tensors). Floating dtypes: multiplies by 1/divisor.
Status divide(void* buffer, int64_t count, DataType dtype, int64_t divisor);

}  // namespace chorus
