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
//
// Resuming mid-epoch on a different number of ranks (elastic training,
// chorus::torch::ElasticState): the ranks that trained the first k samples
// of their shards together trained the first global_position(k) samples of
// the epoch's permutation (rank r's i-th sample is element i x size() + r).
// set_epoch(epoch, first_sample) then deals only the rest of that
// permutation, round-robin over this sampler's ranks, so across the restart
// every sample of the epoch is trained exactly once, except the at most
// size() - 1 samples a sampler always drops at the end of an epoch (or, with
// pad, repeats), counted with the size after the restart.
//
// It is also a torch::data sampler (Sampler<std::vector<size_t>>), so that
// LibTorch's data loaders and chorus::torch::PrefetchLoader can draw batches
// from it: set_epoch(e), then reset() deals epoch e's indices() again and
// next(batch_size) hands them out in order. As in LibTorch's
// DistributedRandomSampler, set_epoch only records the epoch (reset() uses
// it), so it does not disturb a loader's workers calling next().
#pragma once

#include <torch/data/samplers/base.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chorus {
namespace torch {

class DistributedSampler : public ::torch::data::samplers::Sampler<std::vector<size_t>> {
 public:
  struct Options {
    bool shuffle = true;
    bool pad = false;
    uint64_t seed = 0;
  };
  // num_replicas/rank default to chorus::size()/rank() when negative.
  // Throws chorus::Error for dataset_size < num_replicas, rank out of range.
  DistributedSampler(int64_t dataset_size, Options options, int num_replicas = -1, int rank = -1);

  // Records the epoch (and reset() deals it from its first sample).
  void set_epoch(int64_t epoch);
  // The same, dealing only from position first_sample of the epoch's
  // permutation on (0 to dataset_size; throws chorus::Error otherwise).
  void set_epoch(int64_t epoch, int64_t first_sample);
  int64_t epoch() const { return epoch_; }
  int64_t first_sample() const { return first_sample_; }
  // The position in the epoch's permutation once every rank has trained
  // `trained` samples of its shard: first_sample() + trained x num_replicas,
  // at most dataset_size.
  int64_t global_position(int64_t trained) const;
  int num_replicas() const { return num_replicas_; }
  // This rank's sample indices for the current epoch, in training order.
  std::vector<int64_t> indices() const;
  // Samples per rank per epoch (equal on every rank), from first_sample() on.
  int64_t num_samples() const;

  // torch::data::samplers::Sampler: deals the current epoch's indices() from
  // the start; new_size, if given, becomes the dataset size (checked as in
  // the constructor). The constructor has already reset for epoch 0.
  void reset(::torch::optional<size_t> new_size = ::torch::nullopt) override;
  // Up to batch_size of this epoch's indices after the ones already handed
  // out; nullopt once all are. Throws chorus::Error for batch_size 0.
  ::torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  // The epoch, the position in it and the dataset size; load() checks the
  // size against this sampler's and deals that epoch from that position.
  void save(::torch::serialize::OutputArchive& archive) const override;
  void load(::torch::serialize::InputArchive& archive) override;
  // Indices handed out by next() since the last reset().
  size_t position() const { return position_; }

 private:
  void check_dataset_size() const;

  int64_t dataset_size_;
  Options options_;
  int num_replicas_;
  int rank_;
  int64_t epoch_ = 0;
  int64_t first_sample_ = 0;
  std::vector<int64_t> dealt_;  // indices() as of the last reset()
  size_t position_ = 0;
};

}  // namespace torch
}  // namespace chorus
