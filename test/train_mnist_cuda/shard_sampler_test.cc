// ShardSampler: disjoint, equal shards per epoch, from (seed, epoch) alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "chorus/epoch_permutation.h"
#include "shard_sampler.h"
#include "test_files.h"

namespace train_mnist_cuda_test {
namespace {

using train_mnist_cuda::ShardSampler;
using ::testing::HasSubstr;

TEST(ShardSampler, ShardsAreDisjointEqualAndDropTheRemainder) {
  for (int ranks : {1, 2, 3, 8}) {
    const int64_t size = 1003;
    std::set<int64_t> seen;
    for (int rank = 0; rank < ranks; ++rank) {
      const ShardSampler sampler(size, 7, ranks, rank);
      const std::vector<int64_t> mine = sampler.indices(2);
      EXPECT_EQ(static_cast<int64_t>(mine.size()), size / ranks);
      EXPECT_EQ(sampler.samples_per_rank(), size / ranks);
      for (int64_t index : mine) {
        EXPECT_GE(index, 0);
        EXPECT_LT(index, size);
        EXPECT_TRUE(seen.insert(index).second) << "sample " << index << " on two ranks (" << ranks << " ranks)";
      }
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), (size / ranks) * ranks);
  }
}

TEST(ShardSampler, RankTakesEveryRanksthElementOfTheEpochsPermutation) {
  const std::vector<int64_t> order = chorus::epoch_permutation(10, 3, 1);
  const std::vector<int64_t> rank1 = ShardSampler(10, 3, 3, 1).indices(1);
  EXPECT_EQ(rank1, (std::vector<int64_t>{order[1], order[4], order[7]}));
}

TEST(ShardSampler, TheOrderDependsOnSeedAndEpochOnly) {
  const ShardSampler a(500, 42, 2, 0);
  const ShardSampler b(500, 42, 2, 0);
  EXPECT_EQ(a.indices(0), b.indices(0));
  EXPECT_NE(a.indices(0), a.indices(1));
  EXPECT_NE(a.indices(0), ShardSampler(500, 43, 2, 0).indices(0));
}

TEST(ShardSampler, FixedValuesGuardTheArithmetic) {
  // Any change to the mixing, the generator or the bounded draw changes
  // these, and with them every rank's data order (train_mnist's too, which
  // must stay the same: train_mnist_cuda_reference_torch checks the two agree).
  EXPECT_EQ(ShardSampler(10, 7, 2, 1).indices(3), (std::vector<int64_t>{5, 4, 9, 7, 2}));
}

TEST(ShardSampler, BadArgumentsAreNamed) {
  using train_mnist_test::error_of;
  EXPECT_THAT(error_of([] { ShardSampler(10, 0, 0, 0); }), HasSubstr("0 ranks; expected at least 1"));
  EXPECT_THAT(error_of([] { ShardSampler(10, 0, 2, 2); }), HasSubstr("rank 2 is out of range; expected 0 to 1"));
  EXPECT_THAT(error_of([] { ShardSampler(3, 0, 4, 0); }),
              HasSubstr("3 training samples for 4 ranks; expected at least one sample per rank"));
}

TEST(StridedShard, RanksCoverTheTestSetOnce) {
  EXPECT_EQ(train_mnist_cuda::strided_shard(7, 3, 0), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(train_mnist_cuda::strided_shard(7, 3, 1), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(train_mnist_cuda::strided_shard(7, 3, 2), (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(train_mnist_cuda::strided_shard(2, 3, 2).empty());
}

}  // namespace
}  // namespace train_mnist_cuda_test
