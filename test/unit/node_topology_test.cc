// Launcher placement from environment variables and the topology derived
// from every rank's placement (core/base/node_topology.h).
#include "base/node_topology.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace chorus {
namespace {

using Env = std::map<std::string, std::string>;

LauncherPlacement place(const Env& env, int rank, int size, const std::string& host = "vm") {
  return placement_from_env(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      host, rank, size);
}

LauncherPlacement at(const std::string& node, int local_rank = -1) {
  LauncherPlacement p;
  p.node = node;
  p.local_rank = local_rank;
  return p;
}

struct Expected {
  int local_rank, local_size, cross_rank, cross_size;
};

void expect_topology(const std::vector<LauncherPlacement>& all, const std::vector<Expected>& expected) {
  ASSERT_EQ(all.size(), expected.size());
  for (size_t r = 0; r < all.size(); ++r) {
    const Topology t = topology_from_placements(all, static_cast<int>(r));
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(t.rank, static_cast<int>(r));
    EXPECT_EQ(t.size, static_cast<int>(all.size()));
    EXPECT_EQ(t.local_rank, expected[r].local_rank);
    EXPECT_EQ(t.local_size, expected[r].local_size);
    EXPECT_EQ(t.cross_rank, expected[r].cross_rank);
    EXPECT_EQ(t.cross_size, expected[r].cross_size);
  }
}

TEST(PlacementFromEnv, NoLauncherIsTheHostAlone) {
  const LauncherPlacement p = place({}, 0, 1, "node7");
  EXPECT_EQ(p.node, "node7");
  EXPECT_EQ(p.local_rank, -1);
  EXPECT_EQ(p.source, "none");
}

TEST(PlacementFromEnv, SrunStepThatMatchesMpiGivesSlurmNodeAndLocalId) {
  const Env env = {{"SLURMD_NODENAME", "n2"}, {"SLURM_PROCID", "3"},
                   {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "1"}};
  const LauncherPlacement p = place(env, 3, 4);
  EXPECT_EQ(p.node, "vm/n2");
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.source, "srun");
}

TEST(PlacementFromEnv, SlurmStepOfMpirunDaemonsIsNotTrustedForLocalRank) {
  // mpirun inside sbatch: ranks inherit the variables of the orted step
  // (one task per node), which say nothing about the ranks.
  const Env env = {{"SLURMD_NODENAME", "n2"}, {"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"},
                   {"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}};
  const LauncherPlacement p = place(env, 3, 4);
  EXPECT_EQ(p.node, "vm/n2");
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.source, "mpirun");
}

TEST(PlacementFromEnv, VariablesOfAnotherJobAreIgnored) {
  const Env env = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}};
  EXPECT_EQ(place(env, 0, 4).local_rank, -1);
}

TEST(PlacementFromEnv, MalformedNumbersAreIgnored) {
  const Env env = {{"SLURM_PROCID", "0"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", "1x"}};
  const LauncherPlacement p = place(env, 0, 2);
  EXPECT_EQ(p.local_rank, -1);
  EXPECT_EQ(p.source, "none");
  EXPECT_EQ(place({{"SLURM_PROCID", "-0"}, {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_LOCALID", "0"}}, 0, 2)
                .local_rank,
            -1);
}

TEST(TopologyFromPlacements, TwoVirtualNodesOfTwoTasksInBlocks) {
  expect_topology({at("vm/n1", 0), at("vm/n1", 1), at("vm/n2", 0), at("vm/n2", 1)},
                  {{0, 2, 0, 2}, {1, 2, 0, 2}, {0, 2, 1, 2}, {1, 2, 1, 2}});
}

TEST(TopologyFromPlacements, CyclicDistributionKeepsLauncherLocalRanks) {
  // srun -m cyclic: ranks 0, 2 on n1 and 1, 3 on n2.
  expect_topology({at("h/n1", 0), at("h/n2", 0), at("h/n1", 1), at("h/n2", 1)},
                  {{0, 2, 0, 2}, {0, 2, 1, 2}, {1, 2, 0, 2}, {1, 2, 1, 2}});
}

TEST(TopologyFromPlacements, LauncherOrderWithinANodeIsKept) {
  expect_topology({at("a", 1), at("a", 0), at("a", 2)}, {{1, 3, 0, 1}, {0, 3, 0, 1}, {2, 3, 0, 1}});
}

TEST(TopologyFromPlacements, HintsThatAreNotAPermutationFallBackToRankOrder) {
  // Duplicated, missing and out-of-range hints on a node.
  expect_topology({at("a", 0), at("a", 0), at("b", 5), at("b", 0), at("c", -1), at("c", 0)},
                  {{0, 2, 0, 3}, {1, 2, 0, 3}, {0, 2, 1, 3}, {1, 2, 1, 3}, {0, 2, 2, 3}, {1, 2, 2, 3}});
}

TEST(TopologyFromPlacements, UnevenNodes) {
  // Three ranks on a, one on b: only local rank 0 spans both nodes.
  expect_topology({at("a"), at("a"), at("b"), at("a")},
                  {{0, 3, 0, 2}, {1, 3, 0, 1}, {0, 1, 1, 2}, {2, 3, 0, 1}});
}

// Node indices follow each node's lowest world rank, whatever the node
// names sort as, and are the same on every rank of a node.
TEST(TopologyFromPlacements, NodesAreNumberedByTheirLowestWorldRank) {
  const std::vector<LauncherPlacement> all = {at("zeta", 0), at("alpha", 0), at("zeta", 1),
                                              at("mid", 0),  at("alpha", 1), at("mid", 1)};
  const int expected_node[] = {0, 1, 0, 2, 1, 2};
  for (int r = 0; r < 6; ++r) {
    const Topology t = topology_from_placements(all, r);
    EXPECT_EQ(t.node, expected_node[r]) << "rank " << r;
    EXPECT_EQ(t.nodes, 3) << "rank " << r;
  }
  const Topology uneven = topology_from_placements({at("b"), at("a"), at("a")}, 2);
  EXPECT_EQ(uneven.node, 1);
  EXPECT_EQ(uneven.nodes, 2);
  EXPECT_EQ(topology_from_placements({at("vm"), at("vm")}, 1).node, 0);
}

TEST(TopologyFromPlacements, OneHost) {
  expect_topology({at("vm"), at("vm")}, {{0, 2, 0, 1}, {1, 2, 0, 1}});
}

}  // namespace
}  // namespace chorus
