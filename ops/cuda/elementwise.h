// The element-wise kernels of CudaDevice: scale, integer division and
// 16-bit conversion, with the host kernels' results bit for bit
// (ops/kernels/scale.cc, convert.cc): the same float32 arithmetic for 16-bit
// dtypes and the same rounding functions (ops/kernels/half.h), the same
// integer scaling (ops/kernels/integer_scale.h). Arguments are
// the caller's to check (CudaDevice does); each returns the launch's error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "chorus/types.h"

namespace chorus {

// out[i] = in[i] * factor for a floating-point or integer dtype (in may
// equal out); integers by Horovod's rule (integer_scale.h).
cudaError_t launch_scale(const void* in, void* out, int64_t count, DataType dtype, double factor,
                         cudaStream_t stream);
// buffer[i] /= divisor, truncating toward zero, for the integer dtypes.
cudaError_t launch_divide(void* buffer, int64_t count, DataType dtype, int64_t divisor, cudaStream_t stream);
// out[i] = in[i] as `to`, for two different floating-point dtypes other than
// float64 to a 16-bit one. in and out are disjoint, or the same address when
// both dtypes have the same width.
cudaError_t launch_convert(const void* in, DataType from, void* out, DataType to, int64_t count,
                           cudaStream_t stream);

}  // namespace chorus
