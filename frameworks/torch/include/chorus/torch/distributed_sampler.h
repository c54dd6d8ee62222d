// DistributedSampler: which samples this rank trains on in each epoch.
//
// Every rank draws the same permutation of [0, dataset_size) from (seed,
// epoch) and takes every size()-th element starting at its rank, so the
// shards are disjoint and together cover the dataset. All ranks get the same
// number of samples (hence steps): by default the last dataset_size % size()
// samples of the permutation are dropped (different ones each epoch); with
// pad = true the permutation is instead extended with its first samples, as
// PyTorch's DistributedSampler does.
//
// Not LibTorch's DistributedRandomSampler: that one seeds its shuffle with the
// epoch number only, so two runs with different seeds see the same order.
#pragma once

#include <cstdint>
#include <vector>

namespace chorus {
namespace torch {

class DistributedSampler {
 public:
  struct Options {
    bool shuffle = true;
    bool pad = false;
    uint64_t seed = 0;
  };
  // num_replicas/rank default to chorus::size()/rank() when negative.
  // Throws chorus::Error for dataset_size < num_replicas, rank out of range.
  DistributedSampler(int64_t dataset_size, Options options, int num_replicas = -1, int rank = -1);

  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  // This rank's sample indices for the current epoch, in training order.
  std::vector<int64_t> indices() const;
  // Samples per rank per epoch (equal on every rank).
  int64_t num_samples() const;

 private:
  int64_t dataset_size_;
  Options options_;
  int num_replicas_;
  int rank_;
  int64_t epoch_ = 0;
};

}  // namespace torch
}  // namespace chorus
