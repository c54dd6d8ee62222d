// DistributedSampler: one permutation per (seed, epoch), dealt round-robin.
#include "chorus/torch/data/distributed_sampler.h"

#include <torch/serialize/archive.h>

#include <algorithm>
#include <string>

#include "chorus/chorus.h"
#include "chorus/epoch_permutation.h"

namespace chorus {
namespace torch {

DistributedSampler::DistributedSampler(int64_t dataset_size, Options options, int num_replicas,
                                       int rank)
    : dataset_size_(dataset_size),
      options_(options),
      num_replicas_(num_replicas < 0 ? chorus::size() : num_replicas),
      rank_(rank < 0 ? chorus::rank() : rank) {
  const std::string what = "DistributedSampler: ";
  if (num_replicas_ == 0) {
    throw Error(Status::InvalidArgument(what + "num_replicas is 0; expected the number of ranks "
                                               "(> 0), or a negative value for chorus::size()"));
  }
  if (rank_ >= num_replicas_) {
    throw Error(Status::InvalidArgument(what + "rank " + std::to_string(rank_) +
                                        " is out of range; expected 0 to " +
                                        std::to_string(num_replicas_ - 1) +
                                        ", or a negative value for chorus::rank()"));
  }
  check_dataset_size();
  reset();
}

void DistributedSampler::check_dataset_size() const {
  if (dataset_size_ < num_replicas_) {
    throw Error(Status::InvalidArgument(
        "DistributedSampler: dataset_size " + std::to_string(dataset_size_) +
        " is smaller than num_replicas " + std::to_string(num_replicas_) +
        "; expected at least one sample per rank"));
  }
}

void DistributedSampler::set_epoch(int64_t epoch) { set_epoch(epoch, 0); }

void DistributedSampler::set_epoch(int64_t epoch, int64_t first_sample) {
  if (first_sample < 0 || first_sample > dataset_size_) {
    throw Error(Status::InvalidArgument("DistributedSampler::set_epoch: first_sample " +
                                        std::to_string(first_sample) + " is outside the dataset; expected 0 to " +
                                        std::to_string(dataset_size_)));
  }
  epoch_ = epoch;
  first_sample_ = first_sample;
}

int64_t DistributedSampler::global_position(int64_t trained) const {
  return std::min(dataset_size_, first_sample_ + trained * num_replicas_);
}

int64_t DistributedSampler::num_samples() const {
  const int64_t replicas = num_replicas_;
  const int64_t remaining = dataset_size_ - first_sample_;
  return options_.pad ? (remaining + replicas - 1) / replicas : remaining / replicas;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order;
  if (options_.shuffle) {
    order = epoch_permutation(dataset_size_, options_.seed, epoch_);
  } else {
    order.resize(static_cast<size_t>(dataset_size_));
    for (int64_t i = 0; i < dataset_size_; ++i) order[static_cast<size_t>(i)] = i;
  }
  // Samples before first_sample were trained before a restart.
  order.erase(order.begin(), order.begin() + first_sample_);
  const int64_t total = num_samples() * num_replicas_;
  // Padding repeats the first samples dealt (fewer than num_replicas; when
  // fewer remain, they are repeated round and round).
  const size_t remaining = order.size();
  for (size_t i = 0; static_cast<int64_t>(order.size()) < total; ++i) order.push_back(order[i % remaining]);
  order.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples()));
  for (int64_t i = rank_; i < total; i += num_replicas_) mine.push_back(order[static_cast<size_t>(i)]);
  return mine;
}

void DistributedSampler::reset(::torch::optional<size_t> new_size) {
  if (new_size) {
    const int64_t previous = dataset_size_;
    dataset_size_ = static_cast<int64_t>(*new_size);
    try {
      check_dataset_size();
    } catch (...) {
      dataset_size_ = previous;
      throw;
    }
  }
  dealt_ = indices();
  position_ = 0;
}

::torch::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  if (batch_size == 0) {
    throw Error(Status::InvalidArgument(
        "DistributedSampler::next: batch_size is 0; expected at least 1 index per batch"));
  }
  if (position_ >= dealt_.size()) return ::torch::nullopt;
  const size_t end = std::min(dealt_.size(), position_ + batch_size);
  std::vector<size_t> batch;
  batch.reserve(end - position_);
  for (size_t i = position_; i < end; ++i) batch.push_back(static_cast<size_t>(dealt_[i]));
  position_ = end;
  return batch;
}

void DistributedSampler::save(::torch::serialize::OutputArchive& archive) const {
  archive.write("epoch", ::torch::tensor(epoch_, ::torch::kInt64), /*is_buffer=*/true);
  archive.write("position", ::torch::tensor(static_cast<int64_t>(position_), ::torch::kInt64),
                /*is_buffer=*/true);
  archive.write("dataset_size", ::torch::tensor(dataset_size_, ::torch::kInt64),
                /*is_buffer=*/true);
  archive.write("first_sample", ::torch::tensor(first_sample_, ::torch::kInt64), /*is_buffer=*/true);
}

void DistributedSampler::load(::torch::serialize::InputArchive& archive) {
  ::torch::Tensor epoch;
  ::torch::Tensor position;
  ::torch::Tensor dataset_size;
  archive.read("epoch", epoch, /*is_buffer=*/true);
  archive.read("position", position, /*is_buffer=*/true);
  archive.read("dataset_size", dataset_size, /*is_buffer=*/true);
  if (dataset_size.item<int64_t>() != dataset_size_) {
    throw Error(Status::InvalidArgument(
        "DistributedSampler::load: the saved sampler dealt a dataset of " +
        std::to_string(dataset_size.item<int64_t>()) + " samples; expected this sampler's " +
        std::to_string(dataset_size_)));
  }
  // Archives from before first_sample existed deal their epochs whole.
  ::torch::Tensor first_sample;
  const bool has_first = archive.try_read("first_sample", first_sample, /*is_buffer=*/true);
  set_epoch(epoch.item<int64_t>(), has_first ? first_sample.item<int64_t>() : 0);
  reset();
  const int64_t saved_position = position.item<int64_t>();
  if (saved_position < 0 || saved_position > static_cast<int64_t>(dealt_.size())) {
    throw Error(Status::InvalidArgument(
        "DistributedSampler::load: saved position " + std::to_string(saved_position) +
        " is outside this epoch's " + std::to_string(dealt_.size()) + " indices"));
  }
  position_ = static_cast<size_t>(saved_position);
}

}  // namespace torch
}  // namespace chorus
