// Which ranks share a node, as the launcher sees nodes. MPI's shared-memory
// split groups processes by the machine they run on; a launcher may divide
// one machine into several nodes (Slurm's virtual nodes in our test cluster,
// one slurmd each), and then local and cross ranks must follow the
// launcher, because that is how users place processes and devices.
// Everything here is pure (no MPI, no process environment) so that it can be
// tested alone; ops/mpi/mpi_topology.* exchanges placements between ranks.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/topology.h"

namespace chorus {

// What one process learnt from its environment about where it runs.
struct LauncherPlacement {
  // Identifies the node: the host name, plus the Slurm node name when Slurm
  // started this process tree (virtual nodes share one host name).
  std::string node;
  // The launcher's local rank of this process, or -1 when it gave none that
  // matches this MPI job (a hint: used only when a whole node's hints form
  // 0..n-1, see topology_from_placements).
  int local_rank = -1;
  // Which launcher the local rank came from, for logs: "srun", "mpirun" or "none".
  std::string source = "none";
};

// Reads the launcher's variables through `getenv` (returns nullptr when
// unset). Slurm's step variables count only when SLURM_PROCID and
// SLURM_STEP_NUM_TASKS equal this MPI rank and size (ranks started by srun
// itself); otherwise, e.g. for mpirun inside an sbatch job, they describe
// the launcher's daemons, not the ranks. Open MPI's OMPI_COMM_WORLD_* are
// checked the same way.
LauncherPlacement placement_from_env(const std::function<const char*(const char*)>& getenv,
                                     const std::string& hostname, int world_rank, int world_size);

// The topology of `rank` given every rank's placement (index = world rank).
// Ranks with the same node string are local to each other. Their local
// ranks are the launcher's when those hints are exactly 0..n-1 on that
// node, and otherwise their order by world rank. Cross ranks group the
// ranks with equal local rank, ordered by world rank. Nodes are numbered
// in the order of their lowest world rank.
Topology topology_from_placements(const std::vector<LauncherPlacement>& all, int rank);

}  // namespace chorus
