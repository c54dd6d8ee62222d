// ShardSampler: which training samples each rank takes in each epoch, the
// same shards as train_mnist's chorus::torch::DistributedSampler with
// shuffle on and padding off (that class lives in the LibTorch front end;
// its arithmetic is repeated here without LibTorch, and
// test/train_mnist_cuda/ checks the two agree when both are built).
//
// Every rank draws the same permutation of [0, dataset_size) from (seed,
// epoch) and takes elements rank, rank + ranks, ... of its first
// (dataset_size / ranks) * ranks: disjoint shards of equal size (so equal
// steps per rank), the last dataset_size % ranks samples of the permutation
// dropped, different ones each epoch.
#pragma once

#include <cstdint>
#include <vector>

namespace train_mnist_cuda {

class ShardSampler {
 public:
  // Throws chorus::Error when ranks < 1, rank is not in [0, ranks) or the
  // dataset has fewer samples than ranks.
  ShardSampler(int64_t dataset_size, uint64_t seed, int ranks, int rank);

  // This rank's sample indices for `epoch`, in training order.
  std::vector<int64_t> indices(int64_t epoch) const;
  // Samples per rank per epoch.
  int64_t samples_per_rank() const { return dataset_size_ / ranks_; }

 private:
  int64_t dataset_size_;
  uint64_t seed_;
  int ranks_;
  int rank_;
};

// The permutation of [0, n) for (seed, epoch): Fisher-Yates over
// std::mt19937_64 (whose output the C++ standard fixes) seeded with
// SplitMix64(seed ^ SplitMix64(epoch)), drawing bounded integers by rejection
// (std::uniform_int_distribution's algorithm varies between libraries).
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);

// The test samples rank r evaluates: r, r + ranks, ... below dataset_size, so
// the sums over all ranks cover the test set exactly once.
std::vector<int64_t> strided_shard(int64_t dataset_size, int ranks, int rank);

}  // namespace train_mnist_cuda
