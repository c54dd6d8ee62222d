// The pure decisions of the hierarchical allreduce, host and device memory
// alike (ops/hierarchical_selection.h): whether a job's hosts allow it
// (plan_hierarchy), which allreduces take it (HierarchicalSelection::takes;
// its size and dtype rule is in hierarchical_setup_test.cc), and how the
// device path cuts a message among a host's ranks (HierarchicalShares).
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "ops/device_hierarchical_backend.h"
#include "ops/hierarchical_selection.h"

namespace chorus {
namespace {

HierarchyPlan plan(AutoOnOff mode, int hosts, int fewest, int most, Status* status = nullptr) {
  HierarchyPlan out;
  out.hierarchical = true;  // overwritten on success
  const Status s = plan_hierarchy(mode, HostShape{hosts, fewest, most}, "NCCL", &out);
  if (status != nullptr) *status = s;
  EXPECT_TRUE(status != nullptr || s.ok()) << s.to_string();
  return out;
}

TEST(HierarchyPlan, AutoWantsSeveralHostsOfEqualSizeWithTwoRanksOrMore) {
  EXPECT_TRUE(plan(AutoOnOff::kAuto, 2, 2, 2).hierarchical);
  EXPECT_TRUE(plan(AutoOnOff::kAuto, 16, 8, 8).hierarchical);
  const HierarchyPlan one_each = plan(AutoOnOff::kAuto, 4, 1, 1);
  EXPECT_FALSE(one_each.hierarchical);
  EXPECT_EQ(one_each.reason, "one rank per host; flat NCCL");
  const HierarchyPlan uneven = plan(AutoOnOff::kAuto, 2, 1, 3);
  EXPECT_FALSE(uneven.hierarchical);
  EXPECT_EQ(uneven.reason, "hosts hold between 1 and 3 ranks; flat NCCL");
  const HierarchyPlan one_host = plan(AutoOnOff::kAuto, 1, 8, 8);
  EXPECT_FALSE(one_host.hierarchical);
  EXPECT_EQ(one_host.reason, "the job is on one host; flat NCCL");
}

TEST(HierarchyPlan, OnRunsEveryEvenJobOnSeveralHostsAndRefusesUnevenOnes) {
  EXPECT_TRUE(plan(AutoOnOff::kOn, 2, 4, 4).hierarchical);
  // One rank per host: the cross-host step alone, as asked.
  EXPECT_TRUE(plan(AutoOnOff::kOn, 3, 1, 1).hierarchical);
  // One host: the setting is for jobs on several.
  EXPECT_FALSE(plan(AutoOnOff::kOn, 1, 4, 4).hierarchical);
  Status status;
  plan(AutoOnOff::kOn, 3, 2, 4, &status);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "CHORUS_HIERARCHICAL_ALLREDUCE='on' needs the same number of ranks on every host, but this job's 3 "
            "hosts hold between 2 and 4 ranks; expected auto (flat NCCL for such jobs) or off");
}

TEST(HierarchyPlan, OffNeverWhateverTheHosts) {
  for (const HostShape& shape : {HostShape{2, 2, 2}, HostShape{2, 1, 3}, HostShape{1, 4, 4}}) {
    const HierarchyPlan off = plan(AutoOnOff::kOff, shape.hosts, shape.fewest_ranks, shape.most_ranks);
    EXPECT_FALSE(off.hierarchical);
    EXPECT_EQ(off.reason, "CHORUS_HIERARCHICAL_ALLREDUCE=off; flat NCCL");
  }
}

TEST(HierarchicalSelectionTakes, ArgumentsNoBackendAcceptsGoFlatForItsMessage) {
  const HierarchicalSelection on{AutoOnOff::kOn, 0, 4};
  EXPECT_TRUE(on.takes(0, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(on.takes(10, DataType::kInt8, ReduceOp::kMin));
  EXPECT_FALSE(on.takes(10, DataType::kBool, ReduceOp::kMax));
  EXPECT_FALSE(on.takes(10, DataType::kFloat32, ReduceOp::kAverage));
  EXPECT_FALSE(on.takes(-1, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_FALSE(on.takes(10, static_cast<DataType>(kNumDataTypes), ReduceOp::kSum));
  // Auto's threshold is in bytes: 250 float32 elements are 1000 bytes.
  const HierarchicalSelection from_1000{AutoOnOff::kAuto, 1000, 2};
  EXPECT_FALSE(from_1000.takes(249, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_TRUE(from_1000.takes(250, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_FALSE(from_1000.takes(999, DataType::kInt8, ReduceOp::kMax));
  EXPECT_TRUE(from_1000.takes(1000, DataType::kInt8, ReduceOp::kMax));
}

// Each share, laid end to end in local-rank order with the remainder after
// the even part, covers the message once.
void expect_cover(int64_t count, int local_size) {
  const HierarchicalShares shares = HierarchicalShares::of(count, local_size);
  SCOPED_TRACE(std::to_string(count) + " elements over " + std::to_string(local_size) + " ranks");
  EXPECT_EQ(shares.body * local_size + shares.remainder, count);
  EXPECT_LT(shares.remainder, local_size);
  int64_t total = 0;
  for (int r = 0; r < local_size; ++r) {
    EXPECT_EQ(shares.share(r), shares.body + (r == local_size - 1 ? shares.remainder : 0));
    total += shares.share(r);
  }
  EXPECT_EQ(total, count);
  const std::vector<int64_t> body = shares.body_counts();
  const std::vector<int64_t> rest = shares.remainder_counts();
  ASSERT_EQ(body.size(), static_cast<size_t>(local_size));
  ASSERT_EQ(rest.size(), static_cast<size_t>(local_size));
  for (int r = 0; r < local_size; ++r) {
    EXPECT_EQ(body[static_cast<size_t>(r)], shares.body);
    EXPECT_EQ(rest[static_cast<size_t>(r)], r == local_size - 1 ? shares.remainder : 0);
  }
}

TEST(HierarchicalShares, EvenPartsThenTheRemainderOnTheLastLocalRank) {
  for (int local_size : {1, 2, 3, 4, 8}) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{local_size - 1}, int64_t{local_size},
                          int64_t{local_size + 1}, int64_t{1000003}, int64_t{1} << 33}) {
      expect_cover(count, local_size);
    }
  }
  const HierarchicalShares small = HierarchicalShares::of(5, 8);
  EXPECT_EQ(small.body, 0);
  EXPECT_EQ(small.remainder, 5);
  EXPECT_EQ(small.share(0), 0);
  EXPECT_EQ(small.share(7), 5);
  const HierarchicalShares big = HierarchicalShares::of(1001, 4);
  EXPECT_EQ(big.body, 250);
  EXPECT_EQ(big.share(2), 250);
  EXPECT_EQ(big.share(3), 251);
}

}  // namespace
}  // namespace chorus
