// Runs on every rank of a job that srun started (directly, or through
// chorusrun --launcher srun): Chorus must find its rank, size, local and
// cross ranks from the launcher, and its collectives must give the right
// sums. The reference for the topology is Slurm's own description of the
// step (SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_*), which
// Chorus does not read in the same way: it agrees on nodes over MPI.
//
//   srun -N2 -n4 --mpi=pmix slurm_rank_check --expect-nodes 2 --expect-tasks-per-node 2
//
// Every rank prints one line "slurm_rank_check: rank R/S local L/LS cross
// C/CS node NAME" and GoogleTest's verdict; the exit status is non-zero if
// any check failed on this rank.
#include <gtest/gtest.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "slurm_step_layout.h"

namespace {

namespace po = boost::program_options;

// Set from the command line in main(); read by the tests.
struct Expectations {
  int nodes = 0;           // 0: whatever Slurm's step says
  int tasks_per_node = 0;  // 0: whatever Slurm's step says
};
const Expectations& expectations(const Expectations* set = nullptr) {
  static Expectations value;
  if (set != nullptr) value = *set;
  return value;
}

constexpr std::chrono::seconds kWaitLimit{60};

void wait_or_fail(const chorus::Handle& handle) {
  ASSERT_TRUE(handle.wait_for(kWaitLimit)) << handle.name() << " still pending after 60 s";
}

class SlurmRankCheck : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { chorus::init(); }
  static void TearDownTestSuite() { chorus::shutdown(); }
};

TEST_F(SlurmRankCheck, TopologyMatchesSlurmStep) {
  chorus_test::SlurmStepLayout step;
  std::string error;
  ASSERT_TRUE(chorus_test::SlurmStepLayout::from_env(&step, &error)) << error;

  EXPECT_EQ(chorus::rank(), step.task_id);
  EXPECT_EQ(chorus::size(), step.tasks);
  EXPECT_EQ(chorus::local_rank(), step.local_id);
  EXPECT_EQ(chorus::local_size(), step.tasks_on_node(step.node_id));
  // Block distribution with equal tasks per node: the ranks with one local
  // rank are one per node, in node order.
  EXPECT_EQ(chorus::cross_rank(), step.node_id);
  EXPECT_EQ(chorus::cross_size(), step.nodes);
  if (expectations().nodes > 0) {
    EXPECT_EQ(step.nodes, expectations().nodes) << "Slurm placed the step on another number of nodes";
    EXPECT_EQ(chorus::cross_size(), expectations().nodes);
  }
  if (expectations().tasks_per_node > 0) {
    EXPECT_EQ(step.tasks_on_node(step.node_id), expectations().tasks_per_node);
    EXPECT_EQ(chorus::local_size(), expectations().tasks_per_node);
  }
  std::printf("slurm_rank_check: rank %d/%d local %d/%d cross %d/%d node %s\n", chorus::rank(),
              chorus::size(), chorus::local_rank(), chorus::local_size(), chorus::cross_rank(),
              chorus::cross_size(), step.node_name.c_str());
  std::fflush(stdout);
}

TEST_F(SlurmRankCheck, EveryRankAgreesOnTheNodes) {
  // (Slurm node id, Chorus local rank) of every rank, gathered with Chorus.
  chorus_test::SlurmStepLayout step;
  std::string error;
  ASSERT_TRUE(chorus_test::SlurmStepLayout::from_env(&step, &error)) << error;
  std::vector<int64_t> mine = {step.node_id, chorus::local_rank()};
  chorus::Handle all = chorus::allgather(
      "slurm.placement", chorus::Tensor(mine.data(), chorus::DataType::kInt64, {1, 2}));
  wait_or_fail(all);
  const chorus::Tensor out = all.output();
  ASSERT_EQ(out.elements(), 2 * chorus::size());
  const auto* pairs = static_cast<const int64_t*>(out.data);
  // On each node the local ranks are exactly 0..n-1, n = Slurm's count.
  for (int node = 0; node < step.nodes; ++node) {
    std::vector<int> seen(step.tasks_on_node(node), 0);
    for (int r = 0; r < chorus::size(); ++r) {
      if (pairs[2 * r] != node) continue;
      const int64_t local = pairs[2 * r + 1];
      ASSERT_GE(local, 0) << "rank " << r;
      ASSERT_LT(local, static_cast<int64_t>(seen.size())) << "rank " << r << " on node " << node;
      ++seen[static_cast<size_t>(local)];
    }
    for (size_t l = 0; l < seen.size(); ++l) EXPECT_EQ(seen[l], 1) << "node " << node << " local " << l;
  }
}

TEST_F(SlurmRankCheck, AllreduceSumsAndAverages) {
  const int size = chorus::size();
  const int rank = chorus::rank();
  constexpr int kCount = 4099;  // not a multiple of anything convenient
  std::vector<float> sum(kCount), average(kCount);
  for (int i = 0; i < kCount; ++i) {
    sum[i] = static_cast<float>((rank + 1) * (i % 97 + 1));
    average[i] = static_cast<float>(rank * 2 + i % 5);
  }
  chorus::AllreduceOptions sum_op;
  sum_op.op = chorus::ReduceOp::kSum;
  chorus::Handle h1 = chorus::allreduce_async(
      "slurm.sum", chorus::Tensor(sum.data(), chorus::DataType::kFloat32, {kCount}), sum_op);
  chorus::Handle h2 = chorus::allreduce_async(
      "slurm.average", chorus::Tensor(average.data(), chorus::DataType::kFloat32, {kCount}));
  wait_or_fail(h1);
  wait_or_fail(h2);
  // Small integers: float sums are exact, whatever the order.
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  const float mean_rank_term = static_cast<float>(size - 1);  // mean of 2 * rank
  int wrong = 0;
  for (int i = 0; i < kCount && wrong < 5; ++i) {
    const float want_sum = ranks_sum * static_cast<float>(i % 97 + 1);
    const float want_average = mean_rank_term + static_cast<float>(i % 5);
    if (sum[i] != want_sum || average[i] != want_average) {
      ++wrong;
      ADD_FAILURE() << "element " << i << ": sum " << sum[i] << " (want " << want_sum << "), average "
                    << average[i] << " (want " << want_average << ")";
    }
  }
  if (wrong == 0) std::printf("slurm_rank_check: rank %d allreduce ok\n", rank);
}

bool parse_expectations(int argc, char** argv) {
  Expectations parsed;
  po::options_description options("slurm_rank_check options (GoogleTest's --gtest_* flags also apply)");
  options.add_options()("help", "print this help")(
      "expect-nodes", po::value<int>(&parsed.nodes), "the step must span this many nodes")(
      "expect-tasks-per-node", po::value<int>(&parsed.tasks_per_node),
      "every node must run this many tasks");
  po::variables_map values;
  try {
    po::store(po::parse_command_line(argc, argv, options), values);
    po::notify(values);
  } catch (const po::error& e) {
    std::cerr << "slurm_rank_check: " << e.what() << "\n" << options;
    return false;
  }
  if (values.count("help")) {
    std::cout << options;
    std::exit(0);
  }
  if (parsed.nodes < 0 || parsed.tasks_per_node < 0) {
    std::cerr << "slurm_rank_check: --expect-nodes and --expect-tasks-per-node must be positive\n";
    return false;
  }
  expectations(&parsed);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // removes the --gtest_* flags
  if (!parse_expectations(argc, argv)) return 2;
  return RUN_ALL_TESTS();
}
