// EarlyStopping across ranks: every rank stops after the same update when
// each rank sees a different metric, at the update the written-out rule
// gives for the rank average (or for rank 0's sequence with kRootValue),
// where the first and the last rank alone would have stopped elsewhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include <torch/torch.h>

#include "chorus/torch/checkpoint/early_stopping.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

namespace ct = chorus::torch;

using EarlyStoppingParallel = ChorusSuite;

// Rank r's metric at update e: base[e] + (r - (size-1)/2) x swing[e]; the
// rank average is base[e] exactly (dyadic numbers), but single ranks see
// other sequences (and would stop elsewhere).
const std::vector<double> kBase = {1.0, 0.75, 0.5, 0.625, 0.5625, 0.25, 0.75, 0.875};
const std::vector<double> kSwing = {0.5, -0.5, 0.5, -0.5, 0.5, -0.5, 0.5, -0.5};

double metric_of(int rank, int size, size_t e) {
  return kBase[e] + (rank - (size - 1) / 2.0) * kSwing[e];
}

// The reference rule, written out: the first update after which `patience`
// updates have passed without a value below the best.
int64_t stop_update(const std::vector<double>& values, int64_t patience) {
  double best = std::numeric_limits<double>::infinity();
  int64_t waiting = 0;
  for (size_t e = 0; e < values.size(); ++e) {
    if (values[e] < best) {
      best = values[e];
      waiting = 0;
    } else if (++waiting >= patience) {
      return static_cast<int64_t>(e + 1);
    }
  }
  return -1;
}

int64_t run_until_stop(ct::EarlyStopping& stopping, int rank, int size) {
  for (size_t e = 0; e < kBase.size(); ++e) {
    if (stopping.update(metric_of(rank, size, e))) return static_cast<int64_t>(e + 1);
  }
  return -1;
}

TEST_F(EarlyStoppingParallel, AgreedWhenRanksSeeDifferentMetrics) {
  ct::EarlyStoppingOptions options;
  options.patience = 2;
  options.name = "stop_average";
  ct::EarlyStopping average(options);
  const int64_t stopped = run_until_stop(average, rank(), size());
  EXPECT_EQ(stopped, stop_update(kBase, 2));  // the average: updates 4 and 5 do not beat 0.5
  EXPECT_EQ(average.best(), 0.5);
  EXPECT_EQ(average.best_update(), 3);
  const std::vector<int> all = exchange(static_cast<int>(stopped));
  EXPECT_EQ(all, std::vector<int>(all.size(), all[0]));
  // Alone, the first and the last rank would have stopped elsewhere.
  std::vector<double> first, last;
  for (size_t e = 0; e < kBase.size(); ++e) {
    first.push_back(metric_of(0, size(), e));
    last.push_back(metric_of(size() - 1, size(), e));
  }
  EXPECT_NE(stop_update(first, 2), stop_update(last, 2));

  // kRootValue: rank 0's sequence decides for everyone.
  options.agreement = ct::EarlyStoppingOptions::Agreement::kRootValue;
  options.name = "stop_root";
  ct::EarlyStopping root(options);
  EXPECT_EQ(run_until_stop(root, rank(), size()), stop_update(first, 2));
}

TEST_F(EarlyStoppingParallel, BadOptionsAreNamed) {
  ct::EarlyStoppingOptions options;
  options.patience = -1;
  EXPECT_THROW(
      {
        try {
          ct::EarlyStopping stopping(options);
        } catch (const chorus::Error& e) {
          EXPECT_THAT(e.what(), ::testing::HasSubstr("patience=-1 is invalid; expected >= 0"));
          throw;
        }
      },
      chorus::Error);
}

}  // namespace
}  // namespace chorus_test
