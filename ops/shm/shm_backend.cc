#include "ops/shm/shm_backend.h"

namespace chorus {

ShmBackend::ShmBackend(std::unique_ptr<Backend> fallback, std::unique_ptr<ShmGroup> group, int64_t chunk_bytes,
                       const ShmAllreduceSelection& selection)
    : fallback_(std::move(fallback)), group_(std::move(group)), shm_(group_.get(), chunk_bytes), selection_(selection) {}

Status ShmBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) {
  // Invalid dtypes and counts go to MPI, whose checks name them.
  const bool valid = static_cast<int>(dtype) < kNumDataTypes && dtype != DataType::kBool && count >= 0;
  if (valid && selection_.use_shm(count * static_cast<int64_t>(dtype_size(dtype)), dtype, op)) {
    return shm_.allreduce(input, output, count, dtype, op);
  }
  return fallback_->allreduce(input, output, count, dtype, op);
}

}  // namespace chorus
