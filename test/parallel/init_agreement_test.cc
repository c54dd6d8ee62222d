// init() is collective: when one rank cannot start (a bad CHORUS_* value in
// its environment only, or an unwritable timeline on rank 0), every rank's
// init() fails promptly instead of the others starting and then waiting for
// that rank forever. Afterwards every rank can start again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

using ::testing::HasSubstr;

// The last rank's environment is bad; the others' is fine.
TEST(InitAgreement, BadEnvironmentOnOneRankFailsInitOnEveryRank) {
  const int bad = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_CACHE_CAPACITY", world_rank() == bad ? "lots" : nullptr);
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == bad) {
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("CHORUS_CACHE_CAPACITY='lots' is invalid"));
  } else {
    EXPECT_EQ(status.code(), chorus::StatusCode::kAborted);
    EXPECT_THAT(status.message(), HasSubstr("could not start on rank(s) [" + std::to_string(bad) + "]"));
  }
  EXPECT_FALSE(chorus::is_initialized());

  // Nothing was left half-started: all ranks start and work together now.
  ASSERT_TRUE(init_chorus());
  std::vector<int> value{world_rank() + 1};
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  EXPECT_TRUE(is_ok(thrown_by([&] {
    chorus::allreduce("init.after_failure", chorus::Tensor(value.data(), chorus::DataType::kInt32, {1}), sum);
  })));
  EXPECT_EQ(value[0], world_size() * (world_size() + 1) / 2);
  shutdown_chorus();
}

// Ranks fusing differently would run different collectives: refused.
TEST(InitAgreement, FusionThresholdDifferentFromRankZeroFailsInitOnEveryRank) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_FUSION_THRESHOLD", world_rank() == odd ? "0" : nullptr);
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("must be the same on every rank"));
  } else {
    EXPECT_THAT(status.message(), HasSubstr("different from rank 0 on rank(s) [" + std::to_string(odd) + "]"));
  }
  ASSERT_TRUE(init_chorus());
  shutdown_chorus();
}

// The settings are compared through the negotiation's transport, which on
// one host is a shared segment laid out by cache capacity: 1088 and the
// default 1024 give segments of the same size but different layouts, and the
// odd rank's objection must still reach every rank.
TEST(InitAgreement, CacheCapacityDifferentFromRankZeroFailsInitOnEveryRankOnSharedMemory) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env({{"CHORUS_SHM_ALLREDUCE", "on"}, {"CHORUS_CACHE_CAPACITY", world_rank() == odd ? "1088" : nullptr}});
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("must be the same on every rank"));
    EXPECT_THAT(status.message(), HasSubstr("1088"));
  } else {
    EXPECT_EQ(status.code(), chorus::StatusCode::kAborted);
    EXPECT_THAT(status.message(), HasSubstr("different from rank 0 on rank(s) [" + std::to_string(odd) + "]"));
  }
  ASSERT_TRUE(init_chorus());
  shutdown_chorus();
}

TEST(InitAgreement, UnwritableTimelineOnRankZeroFailsInitOnEveryRank) {
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_TIMELINE", "/nonexistent-chorus-dir/timeline.json");
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == 0) {
    EXPECT_THAT(status.message(), HasSubstr("/nonexistent-chorus-dir/timeline.json"));
  } else {
    EXPECT_THAT(status.message(), HasSubstr("could not start on rank(s) [0]"));
  }
  ASSERT_TRUE(init_chorus());
  shutdown_chorus();
}

}  // namespace
}  // namespace chorus_test
