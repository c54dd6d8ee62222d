#include "ops/shm/hierarchical_backend.h"

#include <string>

#include "base/logging.h"
#include "ops/kernels/scale.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

HierarchicalBackend::HierarchicalBackend(std::unique_ptr<Backend> fallback,
                                         std::unique_ptr<HierarchicalAllreduce> hierarchical,
                                         const HierarchicalSelection& selection)
    : ForwardingBackend(std::move(fallback)), hierarchical_(std::move(hierarchical)), selection_(selection) {}

WorkPtr HierarchicalBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                       double factor) {
  if (!selection_.takes(count, dtype, op)) return fallback().allreduce(input, output, count, dtype, op, factor);
  Status status = hierarchical_->allreduce(input, output, count, dtype, op);
  if (status.ok() && factor != 1.0) status = scale(output, output, count, dtype, factor);
  return finished_work(status);
}

Status make_hierarchical_backend(const HierarchicalSelection& selection, const Topology& topology, MPI_Comm comm,
                                 std::unique_ptr<Backend> mpi, std::unique_ptr<Backend>* out) {
  const bool on = selection.mode == AutoOnOff::kOn;
  const bool log = topology.rank == 0;
  HostShape shape;
  shape.hosts = topology.nodes;
  if (selection.mode != AutoOnOff::kOff) {
    int sizes[2] = {topology.local_size, -topology.local_size};
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allreduce (hierarchical allreduce selection)",
                                      MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, comm)));
    shape.fewest_ranks = sizes[0];
    shape.most_ranks = -sizes[1];
  }
  HierarchyPlan plan;
  CHORUS_RETURN_IF_ERROR(plan_hierarchy(selection.mode, shape, "MPI", &plan));
  if (!plan.hierarchical) {
    if (log) CHORUS_LOG(kDebug, "hierarchical allreduce off: " << plan.reason);
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
                                                      << auto_on_off_name(selection.mode) << ", from "
                                                      << selection.threshold_bytes << " bytes");
  }
  *out = std::make_unique<HierarchicalBackend>(std::move(mpi), std::move(hierarchical), selection);
  return Status::OK();
}

}  // namespace chorus
