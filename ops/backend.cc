#include "ops/backend.h"

#include "ops/kernels/scale.h"

namespace chorus {

Status Backend::allreduce_scaled(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                 double factor) {
  CHORUS_RETURN_IF_ERROR(allreduce(input, output, count, dtype, op));
  if (factor == 1.0) return Status::OK();
  return scale(output, output, count, dtype, factor);
}

}  // namespace chorus
