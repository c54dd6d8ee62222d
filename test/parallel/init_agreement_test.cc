// init() is collective: when one rank cannot start (a bad CHORUS_* value in
// its environment only, or an unwritable timeline on rank 0), every rank's
// init() fails promptly instead of the others starting and then waiting for
// that rank forever. Afterwards every rank can start again. The GPU settings
// too: CHORUS_GPU_BACKEND must match, and asking for GPU collectives where a
// rank has no GPU (or the build no CUDA) fails every rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "support/harness.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

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

// A rank watching with a shorter heartbeat timeout than its peers beat for
// would declare them lost while they are well: refused.
TEST(InitAgreement, HeartbeatTimeoutDifferentFromRankZeroFailsInitOnEveryRank) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_HEARTBEAT_TIMEOUT_SECONDS", world_rank() == odd ? "2.5" : nullptr);
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("CHORUS_HEARTBEAT_TIMEOUT_SECONDS must be the same on every rank: rank " +
                                            std::to_string(odd) + " has 2.5, rank 0 has 30"));
  } else {
    EXPECT_THAT(status.message(), HasSubstr("CHORUS_HEARTBEAT_TIMEOUT_SECONDS different from rank 0 on rank(s) [" +
                                            std::to_string(odd) + "]"));
  }
  ASSERT_TRUE(init_chorus());
  shutdown_chorus();
}

// An interface this host does not have, on one rank only: the heartbeat
// cannot start there, so it starts nowhere.
TEST(InitAgreement, HeartbeatInterfaceMissingOnOneRankFailsInitOnEveryRank) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_HEARTBEAT_INTERFACE", world_rank() == odd ? "no-such-if0,240.0.0.0/24" : nullptr);
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_THAT(status.message(), HasSubstr("CHORUS_HEARTBEAT_INTERFACE='no-such-if0,240.0.0.0/24' selects none of "
                                            "this host's interfaces that are up with an IPv4 address ("));
  } else {
    EXPECT_THAT(status.message(), HasSubstr("The heartbeat could not be set up: opening its socket failed on rank(s) [" +
                                            std::to_string(odd) + "]"));
  }
  EXPECT_FALSE(chorus::is_initialized());
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

TEST(InitAgreement, GpuBackendDifferentFromRankZeroFailsInitOnEveryRank) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_GPU_BACKEND", world_rank() == odd ? "staged" : nullptr);
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), "CHORUS_GPU_BACKEND must be the same on every rank: rank " + std::to_string(odd) +
                                    " has staged, rank 0 has auto");
  } else {
    EXPECT_THAT(status.message(), HasSubstr("CHORUS_GPU_BACKEND different from rank 0 on rank(s) [" +
                                            std::to_string(odd) + "]"));
  }
  ASSERT_TRUE(init_chorus());
  shutdown_chorus();
}

// Whether any rank sees a GPU (0 in a build without CUDA); collective.
bool any_rank_sees_a_gpu() {
  int count = 0;
#ifdef CHORUS_WITH_CUDA
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    count = 0;
  }
#endif
  int mine = count > 0 ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any == 1;
}

TEST(InitAgreement, GpuCollectivesAskedForWithoutAGpuFailInitOnEveryRank) {
  if (any_rank_sees_a_gpu()) GTEST_SKIP() << "a rank here has a GPU: asking for GPU collectives can succeed";
  for (const char* mode : {"staged", "nccl"}) {
    SCOPED_TRACE(mode);
    chorus::Status status;
    {
      ScopedEnv env("CHORUS_GPU_BACKEND", mode);
      status = thrown_by([] { chorus::init(); });
    }
    ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
#ifdef CHORUS_WITH_CUDA
    std::string ranks;
    for (int r = 0; r < world_size(); ++r) ranks += (r == 0 ? "" : ", ") + std::to_string(r);
    EXPECT_THAT(status.message(),
                HasSubstr(std::string("CHORUS_GPU_BACKEND=") + mode +
                          " asks for GPU collectives, which need a GPU on every rank, but rank(s) [" + ranks +
                          "] see no CUDA device (this rank: this rank sees no CUDA device ("));
#else
    EXPECT_EQ(status.message(), std::string("CHORUS_GPU_BACKEND=") + mode +
                                    " asks for GPU collectives, but this build of Chorus has no CUDA support "
                                    "(built with CHORUS_WITH_CUDA=OFF)");
#endif
    EXPECT_FALSE(chorus::is_initialized());
  }
  // auto, the default, starts without a GPU: host memory only.
  ASSERT_TRUE(init_chorus());
  EXPECT_FALSE(chorus::supports(chorus::Device::cuda(0)));
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
