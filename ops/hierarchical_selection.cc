#include "ops/hierarchical_selection.h"

namespace chorus {

bool HierarchicalSelection::use_hierarchical(int64_t bytes, DataType dtype, ReduceOp op) const {
  switch (mode) {
    case AutoOnOff::kOff: return false;
    case AutoOnOff::kOn: return true;
    case AutoOnOff::kAuto: break;
  }
  const bool order_matters =
      ranks > 2 && is_floating_point(dtype) && (op == ReduceOp::kSum || op == ReduceOp::kProduct);
  return order_matters || bytes >= threshold_bytes;
}

bool HierarchicalSelection::takes(int64_t count, DataType dtype, ReduceOp op) const {
  const bool valid = static_cast<int>(dtype) < kNumDataTypes && dtype != DataType::kBool && count >= 0 &&
                     op != ReduceOp::kAverage;
  return valid && use_hierarchical(count * static_cast<int64_t>(dtype_size(dtype)), dtype, op);
}

Status plan_hierarchy(AutoOnOff mode, const HostShape& shape, const std::string& flat, HierarchyPlan* out) {
  const bool on = mode == AutoOnOff::kOn;
  HierarchyPlan plan;
  if (mode == AutoOnOff::kOff) {
    plan.reason = "CHORUS_HIERARCHICAL_ALLREDUCE=off; flat " + flat;
  } else if (shape.hosts <= 1) {
    plan.reason = "the job is on one host; flat " + flat;
  } else if (shape.fewest_ranks != shape.most_ranks) {
    if (on) {
      return Status::InvalidArgument(
          "CHORUS_HIERARCHICAL_ALLREDUCE='on' needs the same number of ranks on every host, but this job's " +
          std::to_string(shape.hosts) + " hosts hold between " + std::to_string(shape.fewest_ranks) + " and " +
          std::to_string(shape.most_ranks) + " ranks; expected auto (flat " + flat + " for such jobs) or off");
    }
    plan.reason = "hosts hold between " + std::to_string(shape.fewest_ranks) + " and " +
                  std::to_string(shape.most_ranks) + " ranks; flat " + flat;
  } else if (shape.most_ranks == 1 && !on) {
    plan.reason = "one rank per host; flat " + flat;
  } else {
    plan.hierarchical = true;
  }
  *out = plan;
  return Status::OK();
}

}  // namespace chorus
