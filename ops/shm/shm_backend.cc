#include "ops/shm/shm_backend.h"

namespace chorus {

ShmBackend::ShmBackend(std::unique_ptr<HostCollectives> fallback, std::unique_ptr<ShmGroup> group, int64_t chunk_bytes,
                       const ShmAllreduceSelection& selection)
    : ForwardingBackend(std::move(fallback)),
      group_(std::move(group)),
      shm_(group_.get(), chunk_bytes),
      selection_(selection) {}

bool ShmBackend::takes(int64_t count, DataType dtype, ReduceOp op) const {
  // Invalid dtypes and counts go to MPI, whose checks name them.
  const bool valid = static_cast<int>(dtype) < kNumDataTypes && dtype != DataType::kBool && count >= 0;
  return valid && selection_.use_shm(count * static_cast<int64_t>(dtype_size(dtype)), dtype, op);
}

Status ShmBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) {
  if (takes(count, dtype, op)) return shm_.allreduce(input, output, count, dtype, op);
  return fallback().allreduce(input, output, count, dtype, op);
}

Status ShmBackend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                    double factor) {
  return shm_.allreduce(pieces, dtype, op, nullptr, factor);
}

Status ShmBackend::allreduce_scaled(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                    double factor) {
  if (!takes(count, dtype, op)) return fallback().allreduce_scaled(input, output, count, dtype, op, factor);
  return shm_.allreduce(input, output, count, dtype, op, nullptr, factor);
}

}  // namespace chorus
