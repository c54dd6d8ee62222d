#include "ops/mpi/mpi_topology.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/node_topology.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/process_liveness.h"

namespace chorus {

namespace {

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

Status discover_topology(MPI_Comm comm, Topology* out) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const LauncherPlacement mine = placement_from_env(
      [](const char* name) { return std::getenv(name); }, host_name(), rank, size);

  // Everyone's node string and local-rank hint: a few bytes per rank, once.
  const int length = static_cast<int>(mine.node.size());
  std::vector<int> lengths(size);
  int rc = MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allgather", rc));
  std::vector<int> offsets(size, 0);
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    if (total > INT_MAX) return Status::Internal("node names of all ranks exceed 2 GiB");
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
  }
  std::vector<char> names(static_cast<size_t>(total) + 1);
  rc = MPI_Allgatherv(mine.node.data(), length, MPI_CHAR, names.data(), lengths.data(),
                      offsets.data(), MPI_CHAR, comm);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allgatherv", rc));
  std::vector<int> hints(size);
  rc = MPI_Allgather(&mine.local_rank, 1, MPI_INT, hints.data(), 1, MPI_INT, comm);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allgather", rc));

  std::vector<LauncherPlacement> all(size);
  for (int r = 0; r < size; ++r) {
    all[r].node.assign(names.data() + offsets[r], static_cast<size_t>(lengths[r]));
    all[r].local_rank = hints[r];
  }
  *out = topology_from_placements(all, rank);
  CHORUS_LOG(kDebug, "node '" << mine.node << "' (local rank hint from " << mine.source
                              << "): local " << out->local_rank << "/" << out->local_size
                              << ", cross " << out->cross_rank << "/" << out->cross_size);
  return Status::OK();
}

Status discover_local_peers(MPI_Comm comm, const Topology& topology, LocalPeers* out) {
  const pid_t pid = getpid();
  const uint64_t mine[3] = {static_cast<uint64_t>(topology.node), static_cast<uint64_t>(pid),
                            process_start_time(pid).value_or(0)};
  std::vector<uint64_t> all(3 * static_cast<size_t>(topology.size));
  const int rc = MPI_Allgather(mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, comm);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allgather", rc));
  std::vector<LocalPeer> peers;
  for (int r = 0; r < topology.size; ++r) {
    const uint64_t* theirs = &all[3 * static_cast<size_t>(r)];
    if (r == topology.rank || theirs[0] != mine[0]) continue;
    const LocalPeer peer{r, static_cast<pid_t>(theirs[1]), theirs[2]};
    // Same node, yet another pid namespace (a container per rank): this
    // pid is someone else here, and watching it would be wrong.
    if (peer.start_time == 0 || process_start_time(peer.pid) != peer.start_time) {
      CHORUS_LOG(kDebug, "rank " << r << " (pid " << peer.pid << ") is on this node but not visible from here");
      continue;
    }
    peers.push_back(peer);
  }
  *out = LocalPeers(topology.rank, std::move(peers));
  return Status::OK();
}

}  // namespace chorus
