// Node topology agreed over MPI: every rank reads its launcher placement
// from the environment (core/src/node_topology.h) and all ranks exchange
// them, so every rank derives local and cross ranks from the same complete
// picture instead of trusting its own variables alone.
#pragma once

#include <mpi.h>

#include "chorus/status.h"
#include "topology.h"

namespace chorus {

// Collective over `comm` (MPI_COMM_WORLD's group): fills `out`.
Status discover_topology(MPI_Comm comm, Topology* out);

}  // namespace chorus
