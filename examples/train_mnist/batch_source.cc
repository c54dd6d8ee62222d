// BatchSource: the prefetching loader or today's index_select, same batches.
#include "batch_source.h"

#include <algorithm>
#include <vector>

namespace train_mnist {

namespace ct = chorus::torch;

BatchSource::BatchSource(const MnistData& data, ct::DistributedSampler& sampler,
                         const TrainOptions& options)
    : data_(data), sampler_(sampler), batch_size_(options.batch_size) {
  if (options.loader != TrainOptions::Loader::kPrefetch) return;
  ct::PrefetchLoader::Options loader_options;
  loader_options.batch_size = static_cast<size_t>(options.batch_size);
  loader_options.workers = options.loader_workers;
  loader_options.depth = static_cast<size_t>(options.prefetch_depth);
  // Pinned batches would only help copies to a GPU; train_mnist trains on the CPU.
  loader_options.pin_memory = false;
  const MnistData* source = &data_;
  loader_ = std::make_unique<ct::PrefetchLoader>(
      sampler_,
      [source](const std::vector<size_t>& indices) {
        const std::vector<int64_t> rows(indices.begin(), indices.end());
        const torch::Tensor batch = torch::tensor(rows, torch::kInt64);
        return torch::data::Example<>(source->images.index_select(0, batch),
                                      source->labels.index_select(0, batch));
      },
      loader_options);
}

void BatchSource::start_epoch(int64_t epoch, int64_t first_sample) {
  sampler_.set_epoch(epoch, first_sample);
  if (loader_) {
    loader_->reset();
    return;
  }
  order_ = torch::tensor(sampler_.indices(), torch::kInt64);
  begin_ = 0;
}

std::optional<torch::data::Example<>> BatchSource::next() {
  if (loader_) return loader_->next();
  const int64_t samples = order_.size(0);
  if (begin_ >= samples) return std::nullopt;
  const int64_t count = std::min(batch_size_, samples - begin_);
  const torch::Tensor batch = order_.narrow(0, begin_, count);
  begin_ += count;
  return torch::data::Example<>(data_.images.index_select(0, batch),
                                data_.labels.index_select(0, batch));
}

}  // namespace train_mnist
