#include "ops/host_transport.h"

#include <cstdint>
#include <string>

#include "base/logging.h"
#include "ops/mpi/mpi_setup_channel.h"
#include "ops/shm/hierarchical_backend.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_backend.h"
#include "ops/shm/shm_group.h"
#include "ops/shm/shm_probe.h"
#include "ops/shm/shm_selection.h"

namespace chorus {

Status make_host_backend(const Config& config, const Topology& topology, MPI_Comm comm, std::unique_ptr<Backend> mpi,
                         std::unique_ptr<Backend>* out, const std::string& segment_tag) {
  ShmAllreduceSelection selection;
  selection.mode = config.shm_allreduce;
  selection.threshold_bytes = config.shm_allreduce_threshold_bytes;
  selection.ranks = topology.size;
  const bool one_host = topology.nodes == 1;
  const bool on = selection.mode == AutoOnOff::kOn;
  if (topology.size < 2) {
    *out = std::move(mpi);
    return Status::OK();
  }
  if (!one_host) {
    if (on) {
      return Status::InvalidArgument(
          "CHORUS_SHM_ALLREDUCE='on' needs every rank on one host, but this job has ranks on " +
          std::to_string(topology.nodes) + " hosts; expected auto (shared memory where it applies) or off "
          "(CHORUS_HIERARCHICAL_ALLREDUCE decides for jobs on several hosts)");
    }
    HierarchicalSelection hierarchical;
    hierarchical.mode = config.hierarchical_allreduce;
    hierarchical.threshold_bytes = selection.threshold_bytes;
    hierarchical.ranks = topology.size;
    return make_hierarchical_backend(hierarchical, topology, comm, std::move(mpi), out);
  }
  if (selection.mode == AutoOnOff::kOff) {
    *out = std::move(mpi);
    return Status::OK();
  }
  const ShmAllreduceOptions options;
  MpiSetupChannel channel(comm);
  std::unique_ptr<ShmGroup> group;
  const Status status =
      ShmGroup::create(channel, ShmAllreduce::data_bytes(topology.size, options.chunk_bytes), options.peer_timeout, &group,
                       segment_tag);
  if (!status.ok()) {
    if (on) return Status(status.code(), "CHORUS_SHM_ALLREDUCE='on' but " + status.message());
    if (topology.rank == 0) {
      CHORUS_LOG(kWarning, "shared-memory allreduce unavailable, using MPI: " << status.message());
    }
    *out = std::move(mpi);
    return Status::OK();
  }
  CHORUS_LOG(kDebug, "shared-memory allreduce among " << topology.size << " ranks, mode "
                                                      << auto_on_off_name(selection.mode) << ", from "
                                                      << selection.threshold_bytes << " bytes");
  auto backend = std::make_unique<ShmBackend>(std::move(mpi), std::move(group), options, selection);
  // The sizes auto sends to shared memory, and the engine's store mode
  // (with "on" too), by measurement on this machine (shm_probe.h).
  if (config.effective_shm_probe() != ShmProbeMode::kOff) {
    CHORUS_RETURN_IF_ERROR(probe_and_choose(config, comm, topology.rank, topology.size, options.chunk_bytes,
                                            selection, backend.get()));
  }
  *out = std::move(backend);
  return Status::OK();
}

}  // namespace chorus
