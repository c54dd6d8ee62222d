// ShardSampler: which training samples each rank takes in each epoch, the
// same shards as train_mnist's chorus::torch::DistributedSampler with
// shuffle on and padding off (that class lives in the LibTorch front end;
// both deal chorus::epoch_permutation, and test/train_mnist_cuda/ checks
// the two agree when both are built).
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

// The test samples rank r evaluates: r, r + ranks, ... below dataset_size, so
// the sums over all ranks cover the test set exactly once.
std::vector<int64_t> strided_shard(int64_t dataset_size, int ranks, int rank);

}  // namespace train_mnist_cuda
