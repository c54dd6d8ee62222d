// Scaling kernels: prescale/postscale factors and the division of kAverage.
#pragma once

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// out[i] = in[i] * factor (in may equal out) for floating-point dtypes;
// float16/bfloat16 compute in float32. Integer and bool dtypes: invalid
// argument unless factor == 1 (then it is a copy).
Status scale(const void* in, void* out, int64_t count, DataType dtype, double factor);

// buffer[i] /= divisor, truncating toward zero, for integer dtypes (the
// kAverage of integer tensors). Floating dtypes: multiplies by 1/divisor.
Status divide(void* buffer, int64_t count, DataType dtype, int64_t divisor);

}  // namespace chorus
