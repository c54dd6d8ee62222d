#include "shard_sampler.h"

#include <string>

#include "chorus/epoch_permutation.h"
#include "example_error.h"

namespace train_mnist_cuda {

ShardSampler::ShardSampler(int64_t dataset_size, uint64_t seed, int ranks, int rank)
    : dataset_size_(dataset_size), seed_(seed), ranks_(ranks), rank_(rank) {
  if (ranks_ < 1) {
    train_mnist::fail("ShardSampler: " + std::to_string(ranks_) + " ranks; expected at least 1");
  }
  if (rank_ < 0 || rank_ >= ranks_) {
    train_mnist::fail("ShardSampler: rank " + std::to_string(rank_) + " is out of range; expected 0 to " +
                      std::to_string(ranks_ - 1));
  }
  if (dataset_size_ < ranks_) {
    train_mnist::fail("ShardSampler: " + std::to_string(dataset_size_) + " training samples for " +
                      std::to_string(ranks_) + " ranks; expected at least one sample per rank");
  }
}

std::vector<int64_t> ShardSampler::indices(int64_t epoch) const {
  const std::vector<int64_t> order = chorus::epoch_permutation(dataset_size_, seed_, epoch);
  const int64_t total = samples_per_rank() * ranks_;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(samples_per_rank()));
  for (int64_t i = rank_; i < total; i += ranks_) mine.push_back(order[static_cast<size_t>(i)]);
  return mine;
}

std::vector<int64_t> strided_shard(int64_t dataset_size, int ranks, int rank) {
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < dataset_size; i += ranks) mine.push_back(i);
  return mine;
}

}  // namespace train_mnist_cuda
