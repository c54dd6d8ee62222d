#include "ops/device_hierarchical_setup.h"

#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "ops/device_hierarchical_backend.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/mpi/mpi_setup_channel.h"

namespace chorus {
namespace {

// The levels' communicators and the datatypes of their MPI backends,
// released after the backends that use them (before MPI is finalized, or not
// at all: MPI has released them then).
struct HierarchyComms {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm cross = MPI_COMM_NULL;
  MpiTypes types;

  HierarchyComms() = default;
  HierarchyComms(const HierarchyComms&) = delete;
  HierarchyComms& operator=(const HierarchyComms&) = delete;
  ~HierarchyComms() {
    types.destroy();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (MPI_Comm* comm : {&local, &cross}) {
      if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
    }
  }
};

Status split(MPI_Comm comm, int color, int key, MPI_Comm* out) {
  return mpi_status("MPI_Comm_split (hierarchical allreduce of device memory)",
                    MPI_Comm_split(comm, color, key, out));
}

// OK on every rank of `comm` when `mine` is OK on every rank; otherwise an
// error on every rank naming the ranks where `step` failed (each of which
// returns its own error).
Status agree(MPI_Comm comm, const Status& mine, const std::string& step) {
  MpiSetupChannel channel(comm);
  std::vector<int> failed;
  CHORUS_RETURN_IF_ERROR(gather_failed_ranks(channel, mine, &failed));
  if (!mine.ok()) return Status(mine.code(), step + " failed on this rank: " + mine.message());
  if (failed.empty()) return Status::OK();
  return Status::Aborted(step + " failed on rank(s) [" + rank_list_text(failed) + "] (their own error says why)");
}

// The fewest and most ranks any host holds, from the size of each rank's
// host communicator.
Status host_shape(MPI_Comm comm, MPI_Comm local, int hosts, HostShape* out) {
  int local_size = 1;
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Comm_size", MPI_Comm_size(local, &local_size)));
  int sizes[2] = {local_size, -local_size};
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allreduce (hierarchical allreduce of device memory)",
                                    MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, comm)));
  out->hosts = hosts;
  out->fewest_ranks = sizes[0];
  out->most_ranks = -sizes[1];
  return Status::OK();
}

// Both levels' backends on every rank, whatever the other's outcome: each
// maker is collective over its level, and a rank that skipped one would
// leave its peers there waiting.
Status make_levels(const DeviceHierarchySetup& setup, HierarchyComms* comms, DeviceHierarchy* hierarchy) {
  Status status = comms->types.create();
  if (!status.ok()) return status;
  const Status local = setup.make_local(comms->local, std::make_unique<MpiBackend>(comms->local, &comms->types),
                                        &hierarchy->local);
  const Status cross = setup.make_cross(comms->cross, std::make_unique<MpiBackend>(comms->cross, &comms->types),
                                        &hierarchy->cross);
  if (!local.ok()) return Status(local.code(), "the backend within the host: " + local.message());
  if (!cross.ok()) return Status(cross.code(), "the backend across hosts: " + cross.message());
  if (hierarchy->local == nullptr || hierarchy->cross == nullptr) {
    return Status::Internal("a level's maker returned OK without a backend");
  }
  return Status::OK();
}

}  // namespace

Status make_device_hierarchical_backend(const DeviceHierarchySetup& setup, MPI_Comm comm,
                                        std::unique_ptr<Backend> flat, std::unique_ptr<Backend>* out) {
  const Topology& topology = setup.topology;
  const bool log = topology.rank == 0;
  const bool on = setup.selection.mode == AutoOnOff::kOn;
  const std::string what = "hierarchical allreduce of " + setup.device->device().to_string() + " memory";
  auto comms = std::make_shared<HierarchyComms>();
  HostShape shape;
  shape.hosts = topology.nodes;
  // Off, or one host: nothing to split, and every rank knows it alike.
  if (setup.selection.mode != AutoOnOff::kOff && topology.nodes > 1) {
    // Local ranks keep their order on the host, hosts theirs on every cross
    // communicator.
    CHORUS_RETURN_IF_ERROR(split(comm, topology.node, topology.local_rank, &comms->local));
    CHORUS_RETURN_IF_ERROR(split(comm, topology.local_rank, topology.node, &comms->cross));
    CHORUS_RETURN_IF_ERROR(host_shape(comm, comms->local, topology.nodes, &shape));
  }
  HierarchyPlan plan;
  CHORUS_RETURN_IF_ERROR(plan_hierarchy(setup.selection.mode, shape, setup.flat_name, &plan));
  if (!plan.hierarchical) {
    if (log) CHORUS_LOG(kDebug, what << " off: " << plan.reason);
    *out = std::move(flat);
    return Status::OK();
  }

  DeviceHierarchy hierarchy;
  hierarchy.device = setup.device;
  const Status made = make_levels(setup, comms.get(), &hierarchy);
  const Status agreed = agree(comm, made, "making the " + what + "'s backends");
  if (!agreed.ok()) {
    if (on) return Status(agreed.code(), "CHORUS_HIERARCHICAL_ALLREDUCE='on' but " + agreed.message());
    if (log) CHORUS_LOG(kWarning, what << " unavailable, using flat " << setup.flat_name << ": " << agreed.message());
    // The levels' backends go before their communicators.
    hierarchy = DeviceHierarchy();
    *out = std::move(flat);
    return Status::OK();
  }
  MPI_Comm_rank(comms->local, &hierarchy.local_rank);
  MPI_Comm_size(comms->local, &hierarchy.local_size);
  MPI_Comm_size(comms->cross, &hierarchy.hosts);
  if (log) {
    CHORUS_LOG(kDebug, what << " over " << hierarchy.hosts << " hosts x " << hierarchy.local_size
                            << " ranks, mode " << auto_on_off_name(setup.selection.mode) << ", from "
                            << setup.selection.threshold_bytes << " bytes");
  }
  hierarchy.resources = std::move(comms);
  *out = std::make_unique<DeviceHierarchicalBackend>(std::move(flat), std::move(hierarchy), setup.selection);
  return Status::OK();
}

}  // namespace chorus
