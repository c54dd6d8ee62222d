// PrefetchLoader against its reference: a twin DistributedSampler drained by
// hand on the test thread gives the batches the loader must hand out, in the
// same order, whatever the workers and depth.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chorus/status.h"
#include "chorus/torch/data/distributed_sampler.h"
#include "chorus/torch/data/prefetch_loader.h"

namespace {

using chorus::torch::DistributedSampler;
using chorus::torch::PrefetchLoader;
using ::testing::HasSubstr;
using LoadedBatches = std::vector<std::vector<int64_t>>;

DistributedSampler make_sampler(int64_t n, uint64_t seed, int replicas = 2, int rank = 1) {
  DistributedSampler::Options options;
  options.seed = seed;
  return DistributedSampler(n, options, replicas, rank);
}

// The reference: the sampler's own batches of this epoch.
LoadedBatches sampler_batches(int64_t n, uint64_t seed, int64_t epoch, size_t batch_size) {
  DistributedSampler sampler = make_sampler(n, seed);
  sampler.set_epoch(epoch);
  sampler.reset();
  LoadedBatches batches;
  while (auto batch = sampler.next(batch_size)) batches.emplace_back(batch->begin(), batch->end());
  return batches;
}

// A batch whose data are its indices; the sleep, varying with the batch,
// makes workers finish out of order.
PrefetchLoader::Batch indices_batch(const std::vector<size_t>& indices) {
  std::this_thread::sleep_for(std::chrono::microseconds(indices.front() % 7 * 300));
  const std::vector<int64_t> values(indices.begin(), indices.end());
  return {torch::tensor(values, torch::kInt64), torch::tensor(values, torch::kInt64) * 2};
}

LoadedBatches drain_loader(PrefetchLoader& loader) {
  LoadedBatches batches;
  while (auto batch = loader.next()) {
    EXPECT_TRUE(torch::equal(batch->target, batch->data * 2));
    const torch::Tensor data = batch->data.contiguous();
    batches.emplace_back(data.data_ptr<int64_t>(), data.data_ptr<int64_t>() + data.numel());
  }
  return batches;
}

TEST(PrefetchLoaderTest, OrderEqualsTheSamplersForAnyWorkersAndDepth) {
  const LoadedBatches expected = sampler_batches(203, 7, 0, 5);
  for (int workers : {1, 2, 3, 8}) {
    for (size_t depth : {1, 2, 5, 64}) {
      DistributedSampler sampler = make_sampler(203, 7);
      PrefetchLoader loader(sampler, indices_batch, {5, workers, depth, false});
      loader.reset();
      EXPECT_EQ(drain_loader(loader), expected) << workers << " workers, depth " << depth;
      EXPECT_FALSE(loader.next().has_value()) << "the epoch stays over";
    }
  }
}

TEST(PrefetchLoaderTest, ResetStartsTheSamplersNextEpochEvenMidEpoch) {
  DistributedSampler sampler = make_sampler(100, 3);
  PrefetchLoader loader(sampler, indices_batch, {8, 3, 4, false});
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    sampler.set_epoch(epoch);
    loader.reset();
    EXPECT_EQ(drain_loader(loader), sampler_batches(100, 3, epoch, 8)) << "epoch " << epoch;
  }
  // Stopping after two batches: the next reset deals the next epoch from its start.
  sampler.set_epoch(5);
  loader.reset();
  ASSERT_TRUE(loader.next().has_value());
  ASSERT_TRUE(loader.next().has_value());
  sampler.set_epoch(6);
  loader.reset();
  EXPECT_EQ(drain_loader(loader), sampler_batches(100, 3, 6, 8));
}

TEST(PrefetchLoaderTest, SameSeedSameBatchesOtherSeedOtherBatches) {
  auto run = [](uint64_t seed, int workers) {
    DistributedSampler sampler = make_sampler(64, seed);
    PrefetchLoader loader(sampler, indices_batch, {4, workers, 3, false});
    sampler.set_epoch(1);
    loader.reset();
    return drain_loader(loader);
  };
  EXPECT_EQ(run(21, 1), run(21, 4));
  EXPECT_NE(run(21, 2), run(22, 2));
}

TEST(PrefetchLoaderTest, ADatasetExceptionReachesTheConsumerAtItsBatch) {
  DistributedSampler sampler = make_sampler(60, 1);
  const LoadedBatches expected = sampler_batches(60, 1, 0, 4);
  const size_t failing = 3;
  const size_t poisoned = static_cast<size_t>(expected[failing].front());
  PrefetchLoader loader(
      sampler,
      [poisoned](const std::vector<size_t>& indices) {
        if (indices.front() == poisoned) throw std::runtime_error("image file is truncated");
        return indices_batch(indices);
      },
      {4, 3, 4, false});
  loader.reset();
  for (size_t i = 0; i < failing; ++i) ASSERT_TRUE(loader.next().has_value());
  try {
    loader.next();
    ADD_FAILURE() << "batch " << failing << " must fail";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("building batch 3 of the epoch (4 indices [" +
                                    std::to_string(poisoned)));
    EXPECT_THAT(e.what(), HasSubstr("image file is truncated"));
  }
  EXPECT_FALSE(loader.next().has_value()) << "the epoch ends at the failed batch";
  loader.reset();  // and the loader is usable again
  EXPECT_EQ(loader.next().has_value(), true);
}

TEST(PrefetchLoaderTest, ABadIndexInLibTorchIsNamed) {
  // The sampler deals 40 samples but the tensors hold 10: index_select fails.
  const torch::Tensor images = torch::rand({10, 3});
  DistributedSampler sampler(40, {}, 1, 0);
  PrefetchLoader loader(
      sampler,
      [&images](const std::vector<size_t>& indices) {
        const std::vector<int64_t> rows(indices.begin(), indices.end());
        const torch::Tensor index = torch::tensor(rows, torch::kInt64);
        return PrefetchLoader::Batch(images.index_select(0, index), index);
      },
      {40, 2, 2, false});
  loader.reset();
  try {
    loader.next();
    ADD_FAILURE() << "an index beyond the tensors must fail";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("PrefetchLoader: building batch 0 of the epoch (40 indices"));
    EXPECT_THAT(e.what(), HasSubstr("out of range"));
  }
}

// A sampler that fails on its third batch.
class FailingSampler : public torch::data::samplers::Sampler<std::vector<size_t>> {
 public:
  void reset(torch::optional<size_t>) override { calls_ = 0; }
  torch::optional<std::vector<size_t>> next(size_t) override {
    if (++calls_ == 3) throw std::out_of_range("sampler lost its shard");
    return std::vector<size_t>{calls_};
  }
  void save(torch::serialize::OutputArchive&) const override {}
  void load(torch::serialize::InputArchive&) override {}

 private:
  size_t calls_ = 0;
};

TEST(PrefetchLoaderTest, ASamplerExceptionReachesTheConsumerAfterTheBatchesBeforeIt) {
  FailingSampler sampler;
  PrefetchLoader loader(sampler, indices_batch, {1, 2, 8, false});
  loader.reset();
  ASSERT_TRUE(loader.next().has_value());
  ASSERT_TRUE(loader.next().has_value());
  try {
    loader.next();
    ADD_FAILURE() << "the third batch must fail";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("the sampler failed to give batch 2 of the epoch"));
    EXPECT_THAT(e.what(), HasSubstr("sampler lost its shard"));
  }
  EXPECT_FALSE(loader.next().has_value());
}

// Waits (bounded) until `built` reaches `count`, then a little longer, so
// that a worker drawing beyond it would be seen.
int settle(const std::atomic<int>& built, int count) {
  for (int i = 0; i < 500 && built.load() < count; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return built.load();
}

TEST(PrefetchLoaderTest, AtMostDepthBatchesAreDrawnAheadAndRefilledAtHalf) {
  DistributedSampler sampler = make_sampler(1000, 2);
  std::atomic<int> built{0};
  PrefetchLoader loader(
      sampler,
      [&built](const std::vector<size_t>& indices) {
        ++built;
        return indices_batch(indices);
      },
      {2, 4, 4, false});
  loader.reset();
  EXPECT_EQ(settle(built, 4), 4) << "4 workers, depth 4, nothing taken";
  ASSERT_TRUE(loader.next().has_value());
  EXPECT_EQ(settle(built, 5), 4) << "3 of 4 left: above the refill mark";
  ASSERT_TRUE(loader.next().has_value());
  EXPECT_EQ(settle(built, 6), 6) << "2 of 4 left: refilled to the depth";
}

TEST(PrefetchLoaderTest, DestructionWhileWorkersAreBusyJoinsThem) {
  std::atomic<int> finished{0};
  {
    DistributedSampler sampler = make_sampler(1000, 4);
    PrefetchLoader loader(
        sampler,
        [&finished](const std::vector<size_t>& indices) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          ++finished;
          return indices_batch(indices);
        },
        {3, 4, 8, false});
    loader.reset();
    ASSERT_TRUE(loader.next().has_value());
  }  // workers are mid-batch here
  const int after = finished.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(finished.load(), after) << "no worker runs after the destructor returned";
  {
    DistributedSampler sampler = make_sampler(10, 4);
    PrefetchLoader never_started(sampler, indices_batch, {3, 2, 2, false});
  }
}

TEST(PrefetchLoaderTest, PinMemoryOnlyWhereCudaIsThere) {
  DistributedSampler sampler = make_sampler(20, 4);
  PrefetchLoader loader(sampler, indices_batch, {4, 1, 2, true});
  loader.reset();
  auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  // A CPU-only LibTorch has no page-locked allocator: batches come as made.
  EXPECT_EQ(batch->data.is_pinned(), at::globalContext().hasCUDA());
  EXPECT_EQ(batch->data.device().type(), torch::kCPU);
}

std::string construction_error(PrefetchLoader::MakeBatch make, PrefetchLoader::Options options) {
  DistributedSampler sampler = make_sampler(20, 0);
  try {
    PrefetchLoader loader(sampler, std::move(make), options);
    loader.next();
  } catch (const chorus::Error& e) {
    return e.what();
  }
  return "";
}

TEST(PrefetchLoaderTest, BadOptionsAndMisuseAreNamed) {
  EXPECT_THAT(construction_error(nullptr, {}), HasSubstr("make_batch is empty"));
  EXPECT_THAT(construction_error(indices_batch, {0, 1, 2, false}), HasSubstr("batch_size is 0"));
  EXPECT_THAT(construction_error(indices_batch, {4, 0, 2, false}),
              HasSubstr("workers is 0; expected at least 1"));
  EXPECT_THAT(construction_error(indices_batch, {4, 1, 0, false}), HasSubstr("depth is 0"));
  EXPECT_THAT(construction_error(indices_batch, {4, 1, 2, false}),
              HasSubstr("no epoch started; call reset() before the first next()"));
}

}  // namespace
