// DistributedSampler on its own: every "rank" is a sampler constructed with
// explicit num_replicas and rank, as every process would build it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <torch/data.h>
#include <torch/serialize.h>

#include <sstream>

#include "chorus/status.h"
#include "chorus/torch/data/distributed_sampler.h"

namespace {

using chorus::torch::DistributedSampler;
using ::testing::HasSubstr;

std::vector<std::vector<int64_t>> all_ranks(int64_t n, int replicas, DistributedSampler::Options o,
                                            int64_t epoch) {
  std::vector<std::vector<int64_t>> shards;
  for (int r = 0; r < replicas; ++r) {
    DistributedSampler sampler(n, o, replicas, r);
    sampler.set_epoch(epoch);
    shards.push_back(sampler.indices());
    EXPECT_EQ(static_cast<int64_t>(shards.back().size()), sampler.num_samples());
  }
  return shards;
}

// Interleaves the shards back into the order they were dealt from.
std::vector<int64_t> dealt_order(const std::vector<std::vector<int64_t>>& shards) {
  std::vector<int64_t> order;
  for (size_t i = 0; i < shards[0].size(); ++i) {
    for (const auto& shard : shards) order.push_back(shard[i]);
  }
  return order;
}

std::string sampler_error(int64_t n, int replicas, int rank) {
  try {
    DistributedSampler sampler(n, {}, replicas, rank);
  } catch (const chorus::Error& e) {
    return e.what();
  }
  return "";
}

TEST(DistributedSamplerTest, ShardsAreDisjointEqualAndCoverAllButTheRemainder) {
  for (int64_t n : {4, 7, 100, 103}) {
    for (int replicas : {1, 2, 3, 4}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " replicas=" + std::to_string(replicas));
      const auto shards = all_ranks(n, replicas, {}, 0);
      std::set<int64_t> seen;
      for (const auto& shard : shards) {
        EXPECT_EQ(static_cast<int64_t>(shard.size()), n / replicas);
        for (int64_t i : shard) {
          EXPECT_TRUE(i >= 0 && i < n) << i;
          EXPECT_TRUE(seen.insert(i).second) << i << " is in two shards";
        }
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), n - n % replicas);
    }
  }
}

TEST(DistributedSamplerTest, PadModeCoversEverySampleWithEqualCounts) {
  DistributedSampler::Options pad;
  pad.pad = true;
  for (int64_t n : {4, 7, 103}) {
    for (int replicas : {2, 3, 4}) {
      SCOPED_TRACE("n=" + std::to_string(n) + " replicas=" + std::to_string(replicas));
      const auto shards = all_ranks(n, replicas, pad, 3);
      const int64_t per_rank = (n + replicas - 1) / replicas;
      std::vector<int64_t> all;
      for (const auto& shard : shards) {
        EXPECT_EQ(static_cast<int64_t>(shard.size()), per_rank);
        all.insert(all.end(), shard.begin(), shard.end());
      }
      EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), static_cast<size_t>(n));
      // The padding repeats the permutation's first samples, in order.
      const std::vector<int64_t> order = dealt_order(shards);
      const int64_t extra = per_rank * replicas - n;
      for (int64_t i = 0; i < extra; ++i) EXPECT_EQ(order[n + i], order[i]);
    }
  }
}

TEST(DistributedSamplerTest, SamePermutationFromTheSameSeedAndEpochOnEveryRank) {
  DistributedSampler::Options options;
  options.seed = 42;
  // Built in a different order and on separate objects, the ranks still
  // deal from one permutation of the whole dataset.
  const auto first = all_ranks(60, 3, options, 5);
  auto reversed = first;
  for (int r = 2; r >= 0; --r) {
    DistributedSampler sampler(60, options, 3, r);
    sampler.set_epoch(7);
    (void)sampler.indices();
    sampler.set_epoch(5);
    reversed[r] = sampler.indices();
  }
  EXPECT_EQ(first, reversed);
  std::vector<int64_t> order = dealt_order(first);
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(sorted[i], i);
  std::vector<int64_t> identity(60);
  for (int64_t i = 0; i < 60; ++i) identity[i] = i;
  EXPECT_NE(order, identity) << "shuffle = true left the dataset in order";
}

TEST(DistributedSamplerTest, EpochAndSeedChangeTheOrderAndTheDroppedSamples) {
  DistributedSampler::Options options;
  options.seed = 1;
  const auto epoch0 = dealt_order(all_ranks(103, 4, options, 0));
  const auto epoch1 = dealt_order(all_ranks(103, 4, options, 1));
  EXPECT_NE(epoch0, epoch1);
  options.seed = 2;
  EXPECT_NE(dealt_order(all_ranks(103, 4, options, 0)), epoch0);
  // Without padding 3 samples are left out; over epochs different ones.
  options.seed = 1;
  std::set<std::set<int64_t>> dropped_sets;
  for (int64_t epoch = 0; epoch < 5; ++epoch) {
    const auto order = dealt_order(all_ranks(103, 4, options, epoch));
    std::set<int64_t> dropped;
    for (int64_t i = 0; i < 103; ++i) dropped.insert(i);
    for (int64_t i : order) dropped.erase(i);
    EXPECT_EQ(dropped.size(), 3u);
    dropped_sets.insert(dropped);
  }
  EXPECT_GT(dropped_sets.size(), 1u);
}

TEST(DistributedSamplerTest, EveryOrderOfASmallDatasetOccurs) {
  // 4 samples have 24 orders; an unbiased shuffle reaches all of them within
  // a few hundred epochs (a broken Fisher-Yates, e.g. one that never leaves
  // an element in place, reaches fewer).
  DistributedSampler::Options options;
  options.seed = 9;
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 600; ++epoch) {
    DistributedSampler sampler(4, options, 1, 0);
    sampler.set_epoch(epoch);
    orders.insert(sampler.indices());
  }
  EXPECT_EQ(orders.size(), 24u);
}

TEST(DistributedSamplerTest, WithoutShuffleRanksTakeEveryReplicaThSample) {
  DistributedSampler::Options in_order;
  in_order.shuffle = false;
  DistributedSampler sampler(10, in_order, 3, 1);
  sampler.set_epoch(4);
  EXPECT_EQ(sampler.epoch(), 4);
  EXPECT_EQ(sampler.indices(), (std::vector<int64_t>{1, 4, 7}));
  in_order.pad = true;
  // 10 samples padded to 12 with samples 0 and 1; rank 2 deals positions 2, 5, 8, 11.
  EXPECT_EQ(DistributedSampler(10, in_order, 3, 2).indices(), (std::vector<int64_t>{2, 5, 8, 1}));
}

TEST(DistributedSamplerTest, BadArgumentsAreNamed) {
  EXPECT_THAT(sampler_error(2, 3, 0), HasSubstr("dataset_size 2 is smaller than num_replicas 3"));
  EXPECT_THAT(sampler_error(10, 3, 3), HasSubstr("rank 3 is out of range; expected 0 to 2"));
  EXPECT_THAT(sampler_error(10, 0, 0), HasSubstr("num_replicas is 0"));
  EXPECT_THAT(sampler_error(-1, 1, 0), HasSubstr("dataset_size -1 is smaller than num_replicas 1"));
}

// As a torch::data sampler: next() hands out indices() in batches.
std::vector<int64_t> drain(DistributedSampler& sampler, size_t batch_size) {
  std::vector<int64_t> all;
  while (auto batch = sampler.next(batch_size)) {
    EXPECT_LE(batch->size(), batch_size);
    EXPECT_FALSE(batch->empty());
    all.insert(all.end(), batch->begin(), batch->end());
  }
  return all;
}

TEST(DistributedSamplerTest, NextHandsOutTheEpochsIndicesInBatches) {
  DistributedSampler::Options options;
  options.seed = 5;
  DistributedSampler sampler(103, options, 3, 1);
  EXPECT_EQ(drain(sampler, 7), sampler.indices());  // the constructor reset for epoch 0
  EXPECT_FALSE(sampler.next(7).has_value());
  sampler.set_epoch(3);
  EXPECT_FALSE(sampler.next(1).has_value()) << "set_epoch alone does not restart the epoch";
  sampler.reset();
  DistributedSampler reference(103, options, 3, 1);
  reference.set_epoch(3);
  EXPECT_EQ(drain(sampler, 100), reference.indices());
  EXPECT_THAT(([&] {
                try {
                  sampler.next(0);
                } catch (const chorus::Error& e) {
                  return std::string(e.what());
                }
                return std::string();
              })(),
              HasSubstr("batch_size is 0"));
}

TEST(DistributedSamplerTest, ResetWithANewSizeDealsThatDataset) {
  DistributedSampler sampler(10, {}, 2, 0);
  sampler.reset(40);
  EXPECT_EQ(drain(sampler, 3), DistributedSampler(40, {}, 2, 0).indices());
  EXPECT_THROW(sampler.reset(1), chorus::Error);
  EXPECT_EQ(sampler.num_samples(), 20) << "a refused size leaves the sampler as it was";
}

TEST(DistributedSamplerTest, SaveAndLoadContinueWhereTheSamplerWas) {
  DistributedSampler::Options options;
  options.seed = 11;
  DistributedSampler saved(50, options, 2, 1);
  saved.set_epoch(2);
  saved.reset();
  ASSERT_TRUE(saved.next(4).has_value());
  std::stringstream stream;
  {
    torch::serialize::OutputArchive archive;
    saved.save(archive);
    archive.save_to(stream);
  }
  const std::vector<int64_t> rest = drain(saved, 4);
  DistributedSampler loaded(50, options, 2, 1);
  torch::serialize::InputArchive archive;
  archive.load_from(stream);
  loaded.load(archive);
  EXPECT_EQ(loaded.epoch(), 2);
  EXPECT_EQ(loaded.position(), 4u);
  EXPECT_EQ(drain(loaded, 4), rest);

  DistributedSampler other_size(60, options, 2, 1);
  stream.seekg(0);
  torch::serialize::InputArchive again;
  again.load_from(stream);
  try {
    other_size.load(again);
    ADD_FAILURE() << "loading a sampler of another dataset size must fail";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("dataset of 50 samples; expected this sampler's 60"));
  }
}

// LibTorch's own DataLoader takes it as its sampler and yields exactly the
// samples of indices(), in order.
TEST(DistributedSamplerTest, DrivesLibTorchsDataLoader) {
  DistributedSampler::Options options;
  options.seed = 3;
  DistributedSampler sampler(30, options, 2, 0);
  sampler.set_epoch(1);
  auto dataset = torch::data::datasets::TensorDataset(torch::arange(100, 130, torch::kInt64))
                     .map(torch::data::transforms::Stack<torch::data::TensorExample>());
  auto loader = torch::data::make_data_loader(std::move(dataset), sampler,
                                              torch::data::DataLoaderOptions().batch_size(4));
  std::vector<int64_t> seen;
  for (auto& batch : *loader) {
    for (int64_t i = 0; i < batch.data.size(0); ++i) seen.push_back(batch.data[i].item<int64_t>() - 100);
  }
  DistributedSampler reference(30, options, 2, 0);
  reference.set_epoch(1);
  EXPECT_EQ(seen, reference.indices());
}

// Elastic resume: R ranks train k samples each of epoch e, then the job is
// restarted on R' ranks at the global position those k samples reached.
// Across the two parts every sample of the epoch is trained exactly once,
// except the at most R' - 1 the sampler drops at the end of the epoch (pad:
// repeats), for every R, R', k tried.
TEST(DistributedSamplerResume, NeitherDropsNorRepeatsBeyondTheEndOfEpochRule) {
  const int64_t n = 103;
  for (const bool pad : {false, true}) {
    const DistributedSampler::Options o{true, pad, 7};
    for (int before = 1; before <= 4; ++before) {
      for (int after = 1; after <= 4; ++after) {
        for (const int64_t trained : {int64_t{0}, int64_t{1}, int64_t{9}, n / before}) {
          std::multiset<int64_t> seen;
          int64_t position = 0;
          for (int r = 0; r < before; ++r) {
            DistributedSampler first(n, o, before, r);
            first.set_epoch(3);
            const std::vector<int64_t> shard = first.indices();
            const int64_t k = std::min<int64_t>(trained, static_cast<int64_t>(shard.size()));
            seen.insert(shard.begin(), shard.begin() + k);
            position = first.global_position(k);
          }
          int64_t dealt_after = 0;
          for (int r = 0; r < after; ++r) {
            DistributedSampler second(n, o, after, r);
            second.set_epoch(3, position);
            const std::vector<int64_t> shard = second.indices();
            EXPECT_EQ(static_cast<int64_t>(shard.size()), second.num_samples());
            seen.insert(shard.begin(), shard.end());
            dealt_after += static_cast<int64_t>(shard.size());
          }
          const std::string where = "pad " + std::to_string(pad) + ", " + std::to_string(before) + " -> " +
                                    std::to_string(after) + " ranks after " + std::to_string(trained);
          std::set<int64_t> distinct(seen.begin(), seen.end());
          const int64_t missing = n - static_cast<int64_t>(distinct.size());
          const int64_t repeated = static_cast<int64_t>(seen.size() - distinct.size());
          if (pad) {
            EXPECT_EQ(missing, 0) << where;
            EXPECT_LT(repeated, after) << where;
          } else {
            EXPECT_EQ(repeated, 0) << where;
            EXPECT_LT(missing, after) << where;
          }
          EXPECT_EQ(dealt_after % after, 0) << where;  // equal shares: equal steps
        }
      }
    }
  }
}

TEST(DistributedSamplerResume, ResumesFromThePermutationPositionAndSavesIt) {
  DistributedSampler whole(10, {true, false, 1}, 1, 0);
  whole.set_epoch(2);
  const std::vector<int64_t> order = whole.indices();
  DistributedSampler rest(10, {true, false, 1}, 2, 1);
  rest.set_epoch(2, 4);
  EXPECT_EQ(rest.indices(), (std::vector<int64_t>{order[5], order[7], order[9]}));
  EXPECT_EQ(rest.global_position(2), 8);
  EXPECT_EQ(rest.global_position(9), 10);  // at most the dataset

  std::stringstream bytes;
  {
    torch::serialize::OutputArchive archive;
    rest.save(archive);
    archive.save_to(bytes);
  }
  DistributedSampler loaded(10, {true, false, 1}, 2, 1);
  torch::serialize::InputArchive archive;
  archive.load_from(bytes);
  loaded.load(archive);
  EXPECT_EQ(loaded.first_sample(), 4);
  EXPECT_EQ(loaded.indices(), rest.indices());

  rest.set_epoch(3);  // a new epoch starts from its beginning
  EXPECT_EQ(rest.first_sample(), 0);
  try {
    rest.set_epoch(3, 11);
    ADD_FAILURE() << "no error for a first sample past the dataset";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("first_sample 11 is outside the dataset; expected 0 to 10"));
  }
}

}  // namespace
