#include "shard_sampler.h"

#include <random>
#include <string>
#include <utility>

#include "example_error.h"

namespace train_mnist_cuda {
namespace {

// SplitMix64's finaliser: spreads (seed, epoch) pairs that differ in one bit
// over the whole seed space of the generator.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, bound): values below 2^64 mod bound are redrawn, so that
// every result is equally likely.
uint64_t uniform_below(std::mt19937_64& generator, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t r = generator();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937_64 generator(mix(seed ^ mix(static_cast<uint64_t>(epoch))));
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_below(generator, static_cast<uint64_t>(i) + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(j)]);
  }
  return order;
}

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
  const std::vector<int64_t> order = epoch_permutation(dataset_size_, seed_, epoch);
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
