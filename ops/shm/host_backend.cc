#include "ops/shm/host_backend.h"

#include <chrono>
#include <cstdint>
#include <string>

#include "logging.h"
#include "ops/shm/hierarchical_backend.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_backend.h"
#include "ops/shm/shm_group.h"
#include "ops/shm/shm_selection.h"

namespace chorus {
namespace {

// How long a rank waits for a live peer inside one shared-memory allreduce.
// Ranks enter a collective only after negotiation agreed on it, so a peer
// that takes this long is stuck (e.g. stopped); a dead one is detected
// within milliseconds.
constexpr std::chrono::milliseconds kPeerTimeout{300'000};

}  // namespace

Status make_host_backend(const Config& config, const Topology& topology, MPI_Comm comm,
                         std::unique_ptr<Backend> mpi, std::unique_ptr<Backend>* out) {
  int64_t settings[4] = {static_cast<int64_t>(config.shm_allreduce), config.shm_allreduce_threshold_bytes,
                         topology.local_size == topology.size ? 1 : 0,
                         static_cast<int64_t>(config.hierarchical_allreduce)};
  if (MPI_Bcast(settings, 4, MPI_INT64_T, 0, comm) != MPI_SUCCESS) {
    return Status::Internal("MPI_Bcast (shared-memory allreduce settings) failed");
  }
  ShmAllreduceSelection selection;
  selection.mode = static_cast<ShmAllreduceMode>(settings[0]);
  selection.threshold_bytes = settings[1];
  selection.ranks = topology.size;
  const bool one_host = settings[2] == 1;
  const bool on = selection.mode == ShmAllreduceMode::kOn;
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
    hierarchical.mode = static_cast<ShmAllreduceMode>(settings[3]);
    hierarchical.threshold_bytes = selection.threshold_bytes;
    hierarchical.ranks = topology.size;
    return make_hierarchical_backend(hierarchical, topology, comm, std::move(mpi), out);
  }
  if (selection.mode == ShmAllreduceMode::kOff) {
    *out = std::move(mpi);
    return Status::OK();
  }
  const int64_t chunk = ShmAllreduce::kDefaultChunkBytes;
  std::unique_ptr<ShmGroup> group;
  const Status status =
      ShmGroup::create(comm, ShmAllreduce::data_bytes(topology.size, chunk), kPeerTimeout, &group);
  if (!status.ok()) {
    if (on) return Status(status.code(), "CHORUS_SHM_ALLREDUCE='on' but " + status.message());
    if (topology.rank == 0) {
      CHORUS_LOG(kWarning, "shared-memory allreduce unavailable, using MPI: " << status.message());
    }
    *out = std::move(mpi);
    return Status::OK();
  }
  CHORUS_LOG(kDebug, "shared-memory allreduce among " << topology.size << " ranks, mode "
                                                      << shm_allreduce_mode_name(selection.mode) << ", from "
                                                      << selection.threshold_bytes << " bytes");
  *out = std::make_unique<ShmBackend>(std::move(mpi), std::move(group), chunk, selection);
  return Status::OK();
}

}  // namespace chorus
