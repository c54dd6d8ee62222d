#include "ops/backend.h"

#include <string>

#include "ops/kernels/scale.h"

namespace chorus {

Status Backend::allreduce_scaled(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                 double factor) {
  CHORUS_RETURN_IF_ERROR(allreduce(input, output, count, dtype, op));
  if (factor == 1.0) return Status::OK();
  return scale(output, output, count, dtype, factor);
}

bool Backend::fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const {
  (void)count;
  (void)dtype;
  (void)op;
  return false;
}

Status Backend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                 double factor) {
  (void)dtype;
  (void)op;
  (void)factor;
  return Status::Internal(std::string("the ") + name() + " backend was asked to allreduce " +
                          std::to_string(pieces.size()) + " pieces in place, which it does not do");
}

}  // namespace chorus
