// Conversion between floating-point dtypes: the 16-bit wire formats
// (float16, bfloat16) and float32/float64, rounding to nearest even.
#pragma once

#include <cstdint>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// out[i] = in[i] as `to`. Both dtypes floating-point; in and out must not
// overlap unless they are the same buffer of the same width.
Status convert(const void* in, DataType from, void* out, DataType to, int64_t count);

}  // namespace chorus
