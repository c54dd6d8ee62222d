#include "base/node_topology.h"

#include <algorithm>
#include <map>

namespace chorus {

namespace {

// A launcher variable as a non-negative int, or -1 if unset or not one.
int env_int(const std::function<const char*(const char*)>& getenv, const char* name) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  long value = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || value > (1 << 30)) return -1;
    value = value * 10 + (*c - '0');
  }
  return value > (1 << 30) ? -1 : static_cast<int>(value);
}

}  // namespace

LauncherPlacement placement_from_env(const std::function<const char*(const char*)>& getenv,
                                     const std::string& hostname, int world_rank, int world_size) {
  LauncherPlacement placement;
  placement.node = hostname;
  // slurmd sets SLURMD_NODENAME for every step and batch script it starts,
  // and processes started below them (by srun, or by mpirun's daemons that
  // srun started) inherit it: it names the node the process runs on.
  const char* slurm_node = getenv("SLURMD_NODENAME");
  if (slurm_node != nullptr && *slurm_node != '\0') placement.node += "/" + std::string(slurm_node);

  const int slurm_tasks = env_int(getenv, "SLURM_STEP_NUM_TASKS");
  if (env_int(getenv, "SLURM_PROCID") == world_rank && slurm_tasks == world_size) {
    placement.local_rank = env_int(getenv, "SLURM_LOCALID");
    if (placement.local_rank >= 0) {
      placement.source = "srun";
      return placement;
    }
  }
  if (env_int(getenv, "OMPI_COMM_WORLD_RANK") == world_rank &&
      env_int(getenv, "OMPI_COMM_WORLD_SIZE") == world_size) {
    placement.local_rank = env_int(getenv, "OMPI_COMM_WORLD_LOCAL_RANK");
    if (placement.local_rank >= 0) placement.source = "mpirun";
  }
  return placement;
}

Topology topology_from_placements(const std::vector<LauncherPlacement>& all, int rank) {
  Topology t;
  t.rank = rank;
  t.size = static_cast<int>(all.size());

  // World ranks per node, ascending.
  std::map<std::string, std::vector<int>> nodes;
  for (int r = 0; r < t.size; ++r) nodes[all[r].node].push_back(r);

  std::vector<int> local_rank(all.size(), 0);
  for (const auto& node : nodes) {
    const std::vector<int>& members = node.second;
    std::vector<int> hints;
    for (int r : members) hints.push_back(all[r].local_rank);
    std::sort(hints.begin(), hints.end());
    bool hints_are_permutation = true;
    for (size_t i = 0; i < hints.size(); ++i) hints_are_permutation &= hints[i] == static_cast<int>(i);
    for (size_t i = 0; i < members.size(); ++i) {
      local_rank[members[i]] = hints_are_permutation ? all[members[i]].local_rank : static_cast<int>(i);
    }
  }

  const std::vector<int>& mine = nodes.at(all[rank].node);
  // Members are ascending, so front() is a node's lowest world rank.
  t.nodes = static_cast<int>(nodes.size());
  t.node = 0;
  for (const auto& node : nodes) t.node += node.second.front() < mine.front() ? 1 : 0;
  t.local_rank = local_rank[rank];
  t.local_size = static_cast<int>(mine.size());
  t.cross_rank = 0;
  t.cross_size = 0;
  for (int r = 0; r < t.size; ++r) {
    if (local_rank[r] != t.local_rank) continue;
    if (r < rank) ++t.cross_rank;
    ++t.cross_size;
  }
  return t;
}

}  // namespace chorus
