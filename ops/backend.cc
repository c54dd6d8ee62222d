#include "ops/backend.h"

#include <string>

namespace chorus {

bool Backend::fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const {
  (void)count;
  (void)dtype;
  (void)op;
  return false;
}

WorkPtr Backend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                  double factor) {
  (void)dtype;
  (void)op;
  (void)factor;
  return finished_work(Status::Internal(std::string("the ") + name() + " backend was asked to allreduce " +
                                        std::to_string(pieces.size()) + " pieces in place, which it does not do"));
}

Status Backend::use_allreduce_algorithm(const std::string& algorithm) {
  if (algorithm == name()) return Status::OK();
  return Status::InvalidArgument(std::string("the ") + name() + " backend has no allreduce algorithm '" + algorithm +
                                 "'");
}

}  // namespace chorus
