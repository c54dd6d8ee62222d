#include "ops/shm/shm_backend.h"

#include <limits>

namespace chorus {

ShmBackend::ShmBackend(std::unique_ptr<Backend> fallback, std::unique_ptr<ShmGroup> group, const ShmAllreduceOptions& options,
                       const ShmAllreduceSelection& selection)
    : ForwardingBackend(std::move(fallback)),
      group_(std::move(group)),
      shm_(group_.get(), options),
      selection_(selection),
      configured_(selection) {}

Status ShmBackend::use_allreduce_algorithm(const std::string& algorithm) {
  if (algorithm == "shm") {
    selection_ = configured_;
  } else if (algorithm == "mpi") {
    selection_.threshold_bytes = std::numeric_limits<int64_t>::max();
    selection_.measured.clear();
  } else {
    return Backend::use_allreduce_algorithm(algorithm);
  }
  return Status::OK();
}

bool ShmBackend::takes(int64_t count, DataType dtype, ReduceOp op) const {
  // Invalid dtypes and counts go to MPI, whose checks name them.
  const bool valid = static_cast<int>(dtype) < kNumDataTypes && dtype != DataType::kBool && count >= 0;
  return valid && selection_.use_shm(count * static_cast<int64_t>(dtype_size(dtype)), dtype, op);
}

WorkPtr ShmBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                              double factor) {
  if (!takes(count, dtype, op)) return fallback().allreduce(input, output, count, dtype, op, factor);
  return finished_work(shm_.allreduce(input, output, count, dtype, op, nullptr, factor));
}

WorkPtr ShmBackend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                     double factor) {
  return finished_work(shm_.allreduce(pieces, dtype, op, nullptr, factor));
}

}  // namespace chorus
