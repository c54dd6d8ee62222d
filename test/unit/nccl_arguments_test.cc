// The NCCL backend's argument checks and per-rank block layouts, which run
// before any NCCL call (GPU-free). Built with CHORUS_WITH_NCCL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "ops/nccl/nccl_arguments.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(NcclArgumentsTest, CountsAreNonNegativeAndAddressable) {
  EXPECT_EQ(max_elements(1), kMax);
  EXPECT_EQ(max_elements(4), kMax / 4);
  EXPECT_TRUE(check_count("allreduce", "count", 0, 4).ok());
  EXPECT_TRUE(check_count("allreduce", "count", kMax / 4, 4).ok());
  const Status negative = check_count("allreduce", "count", -3, 4);
  EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.message(), "allreduce: count is negative: -3");
  const Status huge = check_count("allreduce", "count", kMax / 4 + 1, 4);
  EXPECT_EQ(huge.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(huge.message(), HasSubstr("allreduce: count is " + std::to_string(kMax / 4 + 1) +
                                        " elements of 4 bytes, above the " + std::to_string(kMax / 4)));
}

TEST(NcclArgumentsTest, NullBuffersOnlyWhenEmpty) {
  int x = 0;
  EXPECT_TRUE(check_buffer("allgatherv", "input", nullptr, 0).ok());
  EXPECT_TRUE(check_buffer("allgatherv", "input", &x, 5).ok());
  const Status null = check_buffer("allgatherv", "output", nullptr, 5);
  EXPECT_EQ(null.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(null.message(), "allgatherv: output is null but holds 5 elements");
}

TEST(NcclArgumentsTest, LaysOutUnevenBlocksInRankOrder) {
  RankBlocks blocks;
  ASSERT_TRUE(rank_blocks("alltoallv", "send_counts", {3, 0, 5, 1}, 4, 2, &blocks).ok());
  EXPECT_EQ(blocks.counts, (std::vector<size_t>{3, 0, 5, 1}));
  EXPECT_EQ(blocks.offsets, (std::vector<size_t>{0, 3, 3, 8}));
  EXPECT_EQ(blocks.total, 9u);
  EXPECT_FALSE(blocks.equal);
  ASSERT_TRUE(rank_blocks("reducescatter", "recv_counts", {4, 4}, 2, 8, &blocks).ok());
  EXPECT_TRUE(blocks.equal);
  EXPECT_EQ(blocks.offsets, (std::vector<size_t>{0, 4}));
  ASSERT_TRUE(rank_blocks("allgatherv", "counts", {0}, 1, 4, &blocks).ok());
  EXPECT_TRUE(blocks.equal);
  EXPECT_EQ(blocks.total, 0u);
}

TEST(NcclArgumentsTest, RefusesBadBlockCounts) {
  RankBlocks blocks;
  const Status length = rank_blocks("allgatherv", "counts", {1, 2, 3}, 2, 4, &blocks);
  EXPECT_EQ(length.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(length.message(), "allgatherv: expected 2 counts (one per rank), got 3");
  const Status negative = rank_blocks("alltoallv", "recv_counts", {1, -2}, 2, 4, &blocks);
  EXPECT_EQ(negative.message(), "alltoallv: recv_counts[1] is negative: -2");
  const Status total = rank_blocks("reducescatter", "recv_counts", {kMax / 8, kMax / 8, 2}, 3, 4, &blocks);
  EXPECT_EQ(total.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(total.message(), HasSubstr("reducescatter: the recv_counts add up to more than the " +
                                         std::to_string(kMax / 4) + " elements of 4 bytes"));
  EXPECT_THAT(total.message(), HasSubstr("(at recv_counts[2])"));
}

TEST(NcclArgumentsTest, RootIsARank) {
  EXPECT_TRUE(check_root("broadcast", 0, 1).ok());
  EXPECT_TRUE(check_root("broadcast", 3, 4).ok());
  EXPECT_EQ(check_root("broadcast", 4, 4).message(), "broadcast: root rank 4 is not in [0, 4)");
  EXPECT_EQ(check_root("broadcast", -1, 4).code(), StatusCode::kInvalidArgument);
}

TEST(NcclArgumentsTest, AdvancesByElements) {
  alignas(8) char buffer[64];
  EXPECT_EQ(advance(static_cast<void*>(buffer), 3, 8), buffer + 24);
  EXPECT_EQ(advance(static_cast<const void*>(buffer), 5, 2), buffer + 10);
}

}  // namespace
}  // namespace chorus
