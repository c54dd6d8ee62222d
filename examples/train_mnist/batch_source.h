// Where train_mnist's training batches come from: a PrefetchLoader that
// builds the next batches on background threads (the default), or the
// original path, an index_select of the preloaded tensors on the training
// thread (--loader preloaded). Both draw the same indices from the same
// DistributedSampler in the same order, so they give identical batches and a
// run's losses do not depend on the choice.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include <torch/data/example.h>

#include "chorus/torch/data/distributed_sampler.h"
#include "chorus/torch/data/prefetch_loader.h"
#include "mnist_idx.h"
#include "train_options.h"

namespace train_mnist {

class BatchSource {
 public:
  // `data` and `sampler` must outlive this.
  BatchSource(const MnistData& data, chorus::torch::DistributedSampler& sampler,
              const TrainOptions& options);
  // Deals epoch `epoch` of the sampler from position first_sample of its
  // permutation (0: from its start; more after an elastic restart).
  void start_epoch(int64_t epoch, int64_t first_sample = 0);
  // The next batch (images in data, labels in target); nullopt at the epoch's end.
  std::optional<torch::data::Example<>> next();

 private:
  const MnistData& data_;
  chorus::torch::DistributedSampler& sampler_;
  int64_t batch_size_;
  std::unique_ptr<chorus::torch::PrefetchLoader> loader_;  // null: preloaded
  // Preloaded path: this epoch's order and the next batch's start in it.
  torch::Tensor order_;
  int64_t begin_ = 0;
};

}  // namespace train_mnist
