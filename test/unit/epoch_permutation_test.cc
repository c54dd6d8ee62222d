// chorus::epoch_permutation: a permutation of [0, n) fixed by (seed, epoch).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "chorus/epoch_permutation.h"
#include "chorus/status.h"
#include "support/chorus_error_of.h"

namespace chorus {
namespace {

std::vector<int64_t> identity(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  return order;
}

TEST(EpochPermutation, HoldsEveryIndexOnce) {
  for (int64_t n : {0, 1, 2, 7, 500}) {
    std::vector<int64_t> sorted = epoch_permutation(n, 42, 3);
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, identity(n)) << "n = " << n;
  }
}

TEST(EpochPermutation, DependsOnSeedAndEpochOnly) {
  EXPECT_EQ(epoch_permutation(500, 42, 0), epoch_permutation(500, 42, 0));
  EXPECT_NE(epoch_permutation(500, 42, 0), epoch_permutation(500, 42, 1));
  EXPECT_NE(epoch_permutation(500, 42, 0), epoch_permutation(500, 43, 0));
  EXPECT_NE(epoch_permutation(500, 42, 0), identity(500));
}

TEST(EpochPermutation, FixedValuesGuardTheArithmetic) {
  // Any change to the mixing, the generator or the bounded draw changes
  // these, and with them every rank's data order in train_mnist and
  // train_mnist_cuda (whose runs must stay reproducible across versions).
  EXPECT_EQ(epoch_permutation(8, 42, 0), (std::vector<int64_t>{1, 0, 3, 4, 2, 7, 6, 5}));
}

TEST(EpochPermutation, ANegativeSizeIsNamed) {
  EXPECT_THAT(chorus_test::error_of([] { epoch_permutation(-3, 42, 0); }),
              ::testing::HasSubstr("n = -3 is negative; expected the number of samples (>= 0)"));
}

}  // namespace
}  // namespace chorus
