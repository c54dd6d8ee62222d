#include "reference_training.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/nn/functional/loss.h>
#include <torch/torch.h>

#include "chorus/checked_file.h"
#include "chorus/torch/data/distributed_sampler.h"
#include "chorus/torch/pipeline/model_split.h"
#include "chorus/torch/pipeline/pipeline_schedule.h"
#include "support/chorus_average.h"

namespace train_mnist_test {
namespace {

namespace ct = chorus::torch;
namespace F = torch::nn::functional;
using train_mnist::TrainOptions;

// Trainer::evaluate's chunk of test images.
constexpr int64_t kEvalChunk = 1000;

void refuse_what_is_not_mirrored(const TrainOptions& o, int world_size) {
  const auto refuse = [](const std::string& what) {
    throw std::invalid_argument("train_reference: " + what + " is not mirrored by the reference");
  };
  if (o.accumulate != 1) refuse("--accumulate " + std::to_string(o.accumulate));
  if (o.clip_grad_norm != 0) refuse("--clip-grad-norm");
  if (o.compression != ct::Compression::kNone) refuse("--compression");
  if (o.amp != ct::AmpMode::kOff) refuse("--amp");
  if (o.warmup_epochs != 0) refuse("--warmup-epochs");
  if (o.early_stopping_patience != 0) refuse("--early-stopping-patience");
  if (o.resume || o.elastic) refuse("--resume/--elastic");
  if (world_size < 1 || world_size % o.pipeline_stages != 0) {
    refuse("a world size of " + std::to_string(world_size) + " for " + std::to_string(o.pipeline_stages) +
           " stages");
  }
}

// As train_mnist's summary digests them.
uint64_t digest_of(const std::vector<torch::Tensor>& parameters) {
  std::vector<uint64_t> hashes;
  for (const auto& parameter : parameters) {
    const torch::Tensor data = parameter.detach().contiguous();
    hashes.push_back(chorus::checksum64(data.data_ptr(), data.nbytes()));
  }
  return chorus::checksum64(hashes.data(), hashes.size() * sizeof(uint64_t));
}

// Replica r's elements of the permutation: r, r + R, ... (N / R of them).
std::vector<torch::Tensor> deal(const torch::Tensor& permutation, int replicas) {
  const int64_t each = permutation.size(0) / replicas;
  const torch::Tensor table = permutation.narrow(0, 0, each * replicas).view({each, replicas});
  std::vector<torch::Tensor> shards;
  for (int r = 0; r < replicas; ++r) shards.push_back(table.select(1, r).contiguous());
  return shards;
}

// This replica's batch: its mean cross-entropy's gradient (data parallel), or
// the sum of its micro-batches' (loss / M) gradients in micro-batch order
// (a pipeline's step). Leaves them in .grad.
void backward_batch(train_mnist::Classifier& model, const TrainOptions& o, const torch::Tensor& images,
                    const torch::Tensor& labels) {
  if (!o.pipelined()) {
    F::cross_entropy(model.forward(images), labels).backward();
    return;
  }
  const int M = o.micro_batches;
  const auto image_parts = images.chunk(M, 0);
  const auto label_parts = labels.chunk(M, 0);
  for (int m = 0; m < M; ++m) {
    (F::cross_entropy(model.forward(image_parts[static_cast<size_t>(m)]), label_parts[static_cast<size_t>(m)]) / M)
        .backward();
  }
}

}  // namespace

ReferenceRun train_reference(const TrainOptions& o, int world_size, const train_mnist::MnistData& train,
                             const train_mnist::MnistData& test) {
  refuse_what_is_not_mirrored(o, world_size);
  const int stages = o.pipeline_stages;
  const int replicas = world_size / stages;
  const int64_t whole = o.pipelined() ? o.micro_batches : 1;  // a batch's usable samples are a multiple

  torch::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  ReferenceRun run;
  run.model = train_mnist::make_model(o.model);
  const std::vector<torch::Tensor> parameters = run.model->parameters();
  run.adam = std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(o.lr * replicas));

  // A sampler of one replica deals the epoch's whole permutation.
  ct::DistributedSampler sampler(train.size(), {true, false, o.seed}, 1, 0);
  for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
    run.model->train();
    sampler.set_epoch(epoch);
    const std::vector<torch::Tensor> shards = deal(torch::tensor(sampler.indices(), torch::kInt64), replicas);
    const int64_t samples = shards[0].size(0);
    for (int64_t begin = 0; begin < samples; begin += o.batch_size) {
      const int64_t usable = std::min(o.batch_size, samples - begin) / whole * whole;
      if (usable == 0) break;
      std::vector<std::vector<torch::Tensor>> gradients(parameters.size());
      for (int r = 0; r < replicas; ++r) {
        run.adam->zero_grad();
        const torch::Tensor rows = shards[static_cast<size_t>(r)].narrow(0, begin, usable);
        backward_batch(*run.model, o, train.images.index_select(0, rows), train.labels.index_select(0, rows));
        for (size_t i = 0; i < parameters.size(); ++i) gradients[i].push_back(parameters[i].grad().clone());
      }
      for (size_t i = 0; i < parameters.size(); ++i) {
        parameters[i].mutable_grad() = chorus_test::chorus_average(gradients[i]);
      }
      run.adam->step();
    }
  }

  run.model->eval();
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  double correct = 0;
  for (int r = 0; r < replicas; ++r) {
    const torch::Tensor mine = torch::arange(r, test.size(), replicas, torch::kInt64);
    double replica_loss = 0;
    double replica_correct = 0;
    for (int64_t begin = 0; begin < mine.size(0); begin += kEvalChunk) {
      const torch::Tensor chunk = mine.narrow(0, begin, std::min(kEvalChunk, mine.size(0) - begin));
      const torch::Tensor labels = test.labels.index_select(0, chunk);
      const torch::Tensor logits = run.model->forward(test.images.index_select(0, chunk));
      replica_loss += F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                          .item<double>();
      replica_correct += logits.argmax(1).eq(labels).sum().item<double>();
    }
    loss_sum += replica_loss;
    correct += replica_correct;
  }
  run.test_loss = loss_sum / static_cast<double>(test.size());
  run.test_accuracy = correct / static_cast<double>(test.size());

  for (int rank = 0; rank < world_size; ++rank) {
    run.parameter_digests.push_back(
        o.pipelined() ? digest_of(ct::stage_part(run.model->layers(), stages, rank % stages)->parameters())
                      : digest_of(parameters));
  }
  return run;
}

train_mnist::RunSummary reference_summary(const TrainOptions& o, int world_size, const ReferenceRun& run) {
  train_mnist::RunSummary summary;
  summary.world_size = world_size;
  summary.model = train_mnist::model_kind_name(o.model);
  summary.pipeline_stages = o.pipeline_stages;
  summary.micro_batches = o.micro_batches;
  summary.schedule = o.pipelined() ? ct::pipeline_schedule_name(o.schedule) : "none";
  summary.data_parallel_size = world_size / o.pipeline_stages;
  summary.epochs_run = summary.epochs_this_run = o.epochs;
  summary.final_test_loss = run.test_loss;
  summary.best_test_loss = std::nan("");  // only the last epoch is evaluated
  summary.final_test_accuracy = run.test_accuracy;
  summary.parameter_digests = run.parameter_digests;
  return summary;
}

}  // namespace train_mnist_test
