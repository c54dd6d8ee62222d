#include "ops/shm/shm_selection.h"

namespace chorus {

bool ShmAllreduceSelection::use_shm(int64_t bytes, DataType dtype, ReduceOp op) const {
  switch (mode) {
    case AutoOnOff::kOff: return false;
    case AutoOnOff::kOn: return true;
    case AutoOnOff::kAuto: break;
  }
  const bool half = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
  const bool rounds_per_step = op == ReduceOp::kSum || op == ReduceOp::kProduct;
  if (ranks > 2 && half && rounds_per_step) return true;
  if (measured.empty()) return bytes >= threshold_bytes;
  bool shm = false;
  for (const Range& range : measured) {
    if (range.from_bytes > bytes) break;
    shm = range.shm;
  }
  return shm;
}

}  // namespace chorus
