// Node topology agreed over MPI: every rank reads its launcher placement
// from the environment (core/base/node_topology.h) and all ranks exchange
// them, so every rank derives local and cross ranks from the same complete
// picture instead of trusting its own variables alone.
#pragma once

#include <mpi.h>

#include "chorus/status.h"
#include "ops/local_peers.h"
#include "base/topology.h"

namespace chorus {

// Collective over `comm` (MPI_COMM_WORLD's group): fills `out`.
Status discover_topology(MPI_Comm comm, Topology* out);

// Collective over `comm` (MPI_COMM_WORLD's group): the other ranks of this
// rank's node in `topology` whose processes this one can see (the same pid
// namespace: the pid names a process with the start time the peer reported).
Status discover_local_peers(MPI_Comm comm, const Topology& topology, LocalPeers* out);

}  // namespace chorus
