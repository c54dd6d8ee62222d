#include "ops/shm/hierarchical_backend.h"

#include <string>

#include "base/logging.h"
#include "ops/kernels/scale.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

bool HierarchicalSelection::use_hierarchical(int64_t bytes, DataType dtype, ReduceOp op) const {
  switch (mode) {
    case ShmAllreduceMode::kOff: return false;
    case ShmAllreduceMode::kOn: return true;
    case ShmAllreduceMode::kAuto: break;
  }
  const bool order_matters =
      ranks > 2 && is_floating_point(dtype) && (op == ReduceOp::kSum || op == ReduceOp::kProduct);
  return order_matters || bytes >= threshold_bytes;
}

HierarchicalBackend::HierarchicalBackend(std::unique_ptr<Backend> fallback,
                                         std::unique_ptr<HierarchicalAllreduce> hierarchical,
                                         const HierarchicalSelection& selection)
    : ForwardingBackend(std::move(fallback)), hierarchical_(std::move(hierarchical)), selection_(selection) {}

bool HierarchicalBackend::takes(int64_t count, DataType dtype, ReduceOp op) const {
  // Invalid dtypes, ops and counts go to MPI, whose checks name them.
  const bool valid = static_cast<int>(dtype) < kNumDataTypes && dtype != DataType::kBool && count >= 0 &&
                     op != ReduceOp::kAverage;
  return valid && selection_.use_hierarchical(count * static_cast<int64_t>(dtype_size(dtype)), dtype, op);
}

WorkPtr HierarchicalBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                       double factor) {
  if (!takes(count, dtype, op)) return fallback().allreduce(input, output, count, dtype, op, factor);
  Status status = hierarchical_->allreduce(input, output, count, dtype, op);
  if (status.ok() && factor != 1.0) status = scale(output, output, count, dtype, factor);
  return finished_work(status);
}

Status make_hierarchical_backend(const HierarchicalSelection& selection, const Topology& topology, MPI_Comm comm,
                                 std::unique_ptr<Backend> mpi, std::unique_ptr<Backend>* out) {
  const bool on = selection.mode == ShmAllreduceMode::kOn;
  const bool log = topology.rank == 0;
  if (selection.mode == ShmAllreduceMode::kOff) {
    if (log) CHORUS_LOG(kDebug, "hierarchical allreduce off (CHORUS_HIERARCHICAL_ALLREDUCE=off): flat MPI");
    *out = std::move(mpi);
    return Status::OK();
  }
  int sizes[2] = {topology.local_size, -topology.local_size};
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allreduce (hierarchical allreduce selection)",
                                    MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, comm)));
  const int fewest = sizes[0];
  const int most = -sizes[1];
  if (fewest != most) {
    if (on) {
      return Status::InvalidArgument(
          "CHORUS_HIERARCHICAL_ALLREDUCE='on' needs the same number of ranks on every host, but this job's " +
          std::to_string(topology.nodes) + " hosts hold between " + std::to_string(fewest) + " and " +
          std::to_string(most) + " ranks; expected auto (flat MPI for such jobs) or off");
    }
    if (log) {
      CHORUS_LOG(kDebug, "hierarchical allreduce off: hosts hold between " << fewest << " and " << most
                                                                           << " ranks; flat MPI");
    }
    *out = std::move(mpi);
    return Status::OK();
  }
  if (most == 1 && !on) {
    if (log) CHORUS_LOG(kDebug, "hierarchical allreduce off: one rank per host; flat MPI");
    *out = std::move(mpi);
    return Status::OK();
  }
  std::unique_ptr<HierarchicalAllreduce> hierarchical;
  const Status status = HierarchicalAllreduce::create(comm, topology.node, topology.local_rank,
                                                      HierarchicalAllreduceOptions(), &hierarchical);
  if (!status.ok()) {
    if (on) return Status(status.code(), "CHORUS_HIERARCHICAL_ALLREDUCE='on' but " + status.message());
    if (log) CHORUS_LOG(kWarning, "hierarchical allreduce unavailable, using flat MPI: " << status.message());
    *out = std::move(mpi);
    return Status::OK();
  }
  if (log) {
    CHORUS_LOG(kDebug, "hierarchical allreduce over " << hierarchical->hosts() << " hosts x "
                                                      << hierarchical->local_size() << " ranks, mode "
                                                      << shm_allreduce_mode_name(selection.mode) << ", from "
                                                      << selection.threshold_bytes << " bytes");
  }
  *out = std::make_unique<HierarchicalBackend>(std::move(mpi), std::move(hierarchical), selection);
  return Status::OK();
}

}  // namespace chorus
