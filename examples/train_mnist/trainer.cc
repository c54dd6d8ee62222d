#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <utility>

#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include "example_error.h"

namespace train_mnist {
namespace {

using Clock = std::chrono::steady_clock;
namespace ct = chorus::torch;

// Evaluation forward passes take this many images at once (memory bound).
constexpr int64_t kEvalChunk = 1000;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

uint64_t digest_of(const Classifier& model) {
  uint64_t hash = 14695981039346656037ull;
  for (const auto& parameter : model.parameters()) {
    const torch::Tensor data = parameter.detach().contiguous();
    const auto* bytes = static_cast<const uint8_t*>(data.data_ptr());
    for (size_t i = 0; i < data.nbytes(); ++i) {
      hash ^= bytes[i];
      hash *= 1099511628211ull;
    }
  }
  return hash;
}

// Rank 0 ran `action`; every rank returns its error message ("" when it
// worked), so an error on rank 0 fails all ranks instead of leaving the
// others waiting in the next collective.
std::string rank0_outcome(int rank, const std::string& name, const std::function<void()>& action) {
  std::string error;
  if (rank == 0) {
    try {
      action();
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  return ct::broadcast_bytes(error, 0, name);
}

}  // namespace

Trainer::Trainer(TrainOptions options, std::ostream& out, bool live_progress)
    : options_(std::move(options)),
      printer_(out, chorus::rank() == 0, live_progress),
      rank_(chorus::rank()),
      size_(chorus::size()),
      train_(load_mnist(options_.data_dir, MnistSplit::kTrain)),
      test_(load_mnist(options_.data_dir, MnistSplit::kTest)),
      sampler_(train_.size(), ct::DistributedSampler::Options{true, false, options_.seed}) {
  torch::set_num_threads(options_.threads);
  torch::manual_seed(options_.seed);
  model_ = make_model(options_.model);
  adam_ = std::make_unique<torch::optim::Adam>(
      model_->parameters(), torch::optim::AdamOptions(ct::scale_learning_rate(options_.lr)));
  ct::DistributedOptimizerOptions distributed;
  distributed.compression = options_.compression;
  distributed.backward_passes_per_step = static_cast<int>(options_.accumulate);
  optimizer_ = std::make_unique<ct::DistributedOptimizer>(*adam_, model_->named_parameters(),
                                                          distributed);
}

void Trainer::restore_and_synchronize() {
  const std::string error = rank0_outcome(rank_, "train_mnist.restore", [&] {
    if (options_.checkpoint_dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(options_.checkpoint_dir, ec);
    if (ec || !std::filesystem::is_directory(options_.checkpoint_dir)) {
      fail("Cannot use --checkpoint-dir '" + options_.checkpoint_dir + "': " +
           (ec ? ec.message() : "not a directory") + " (expected a writable folder)");
    }
    if (options_.resume) {
      progress_ = load_checkpoint(last_checkpoint_path(options_.checkpoint_dir), *model_, *adam_);
    }
  });
  if (!error.empty()) fail(error);

  ct::broadcast_parameters(*model_, 0);
  ct::broadcast_optimizer_state(*adam_, 0);
  progress_.epochs_completed = ct::broadcast_scalar(progress_.epochs_completed, 0, "train_mnist.epochs_completed");
  progress_.best_test_loss = ct::broadcast_scalar(progress_.best_test_loss, 0, "train_mnist.best_test_loss");
  progress_.best_epoch = ct::broadcast_scalar(progress_.best_epoch, 0, "train_mnist.best_epoch");
  progress_.epochs_without_improvement = ct::broadcast_scalar(
      progress_.epochs_without_improvement, 0, "train_mnist.epochs_without_improvement");
  progress_.last_test_loss = ct::broadcast_scalar(progress_.last_test_loss, 0, "train_mnist.last_test_loss");
  progress_.last_test_accuracy =
      ct::broadcast_scalar(progress_.last_test_accuracy, 0, "train_mnist.last_test_accuracy");
  if (options_.resume) {
    printer_.message("resumed from " + last_checkpoint_path(options_.checkpoint_dir) + " after epoch " +
                     std::to_string(progress_.epochs_completed));
  }
}

void Trainer::optimizer_step() {
  if (options_.clip_grad_norm > 0) {
    // Clip the averaged gradients, not each rank's own: synchronize first,
    // then step without a second allreduce.
    optimizer_->synchronize();
    torch::nn::utils::clip_grad_norm_(model_->parameters(), options_.clip_grad_norm);
    auto skip = optimizer_->skip_synchronize();
    optimizer_->step();
  } else {
    optimizer_->step();
  }
}

Trainer::EpochMetrics Trainer::train_epoch(int64_t epoch) {
  model_->train();
  sampler_.set_epoch(epoch);
  const std::vector<int64_t> indices = sampler_.indices();
  const int64_t samples = static_cast<int64_t>(indices.size());
  const torch::Tensor order = torch::tensor(indices, torch::kInt64);
  printer_.start_epoch(epoch + 1, options_.epochs, samples * size_);

  const auto start = Clock::now();
  double loss_sum = 0;
  int64_t passes_in_step = 0;
  for (int64_t begin = 0; begin < samples; begin += options_.batch_size) {
    const int64_t count = std::min(options_.batch_size, samples - begin);
    const torch::Tensor batch = order.narrow(0, begin, count);
    const torch::Tensor images = train_.images.index_select(0, batch);
    const torch::Tensor labels = train_.labels.index_select(0, batch);
    if (passes_in_step == 0) optimizer_->zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model_->forward(images), labels);
    // Accumulated passes sum into .grad: scale so the step sees their mean.
    (options_.accumulate > 1 ? loss / static_cast<double>(options_.accumulate) : loss).backward();
    ++passes_in_step;
    // The last batch of the epoch steps too, with the passes it has, so no
    // gradient carries over into the next epoch (or a checkpoint).
    if (passes_in_step == options_.accumulate || begin + count >= samples) {
      optimizer_step();
      passes_in_step = 0;
    }
    const double batch_loss = loss.item<double>();
    loss_sum += batch_loss * static_cast<double>(count);
    printer_.update((begin + count) * size_, batch_loss);
  }
  EpochMetrics metrics;
  metrics.train_seconds = seconds_since(start);
  metrics.train_samples = samples * size_;
  metrics.train_loss =
      ct::allreduce_metric(loss_sum, "train_mnist.train_loss_sum", chorus::ReduceOp::kSum) /
      static_cast<double>(metrics.train_samples);
  return metrics;
}

Trainer::Evaluation Trainer::evaluate() {
  model_->eval();
  torch::NoGradGuard no_grad;
  // Rank r takes test samples r, r + size, ...; sums over ranks give the
  // exact average over the whole test set.
  const torch::Tensor mine = torch::arange(rank_, test_.size(), size_, torch::kInt64);
  double loss_sum = 0;
  double correct = 0;
  for (int64_t begin = 0; begin < mine.size(0); begin += kEvalChunk) {
    const torch::Tensor chunk = mine.narrow(0, begin, std::min(kEvalChunk, mine.size(0) - begin));
    const torch::Tensor labels = test_.labels.index_select(0, chunk);
    const torch::Tensor logits = model_->forward(test_.images.index_select(0, chunk));
    loss_sum += torch::nn::functional::cross_entropy(
                    logits, labels,
                    torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                    .item<double>();
    correct += logits.argmax(1).eq(labels).sum().item<double>();
  }
  const double total = static_cast<double>(test_.size());
  Evaluation evaluation;
  evaluation.loss =
      ct::allreduce_metric(loss_sum, "train_mnist.test_loss_sum", chorus::ReduceOp::kSum) / total;
  evaluation.accuracy =
      ct::allreduce_metric(correct, "train_mnist.test_correct", chorus::ReduceOp::kSum) / total;
  return evaluation;
}

void Trainer::save_checkpoints(bool best) {
  const std::string error = rank0_outcome(rank_, "train_mnist.checkpoint", [&] {
    const std::string bytes = encode_checkpoint(*model_, *adam_, progress_);
    write_file_atomically(last_checkpoint_path(options_.checkpoint_dir), bytes);
    if (best) write_file_atomically(best_checkpoint_path(options_.checkpoint_dir), bytes);
  });
  if (!error.empty()) fail(error);
}

std::vector<uint64_t> Trainer::parameter_digests() {
  const uint64_t mine = digest_of(*model_);
  const torch::Tensor all =
      ct::allgather(torch::tensor({static_cast<int64_t>(mine)}, torch::kInt64), "train_mnist.digest");
  std::vector<uint64_t> digests;
  for (int64_t i = 0; i < all.size(0); ++i) digests.push_back(static_cast<uint64_t>(all[i].item<int64_t>()));
  return digests;
}

RunSummary Trainer::run() {
  const auto start = Clock::now();
  restore_and_synchronize();

  RunSummary summary;
  summary.world_size = size_;
  summary.model = model_kind_name(options_.model);
  double train_seconds = 0;
  int64_t train_samples = 0;
  const auto patience_exhausted = [&] {
    return options_.early_stopping_patience > 0 &&
           progress_.epochs_without_improvement >= options_.early_stopping_patience;
  };
  while (progress_.epochs_completed < options_.epochs && !patience_exhausted()) {
    const auto epoch_start = Clock::now();
    const int64_t epoch = progress_.epochs_completed;
    const EpochMetrics metrics = train_epoch(epoch);
    const Evaluation evaluation = evaluate();
    train_seconds += metrics.train_seconds;
    train_samples += metrics.train_samples;

    // Every rank has the same (allreduced) test loss, so every rank updates
    // the progress, and so takes the early-stopping decision, identically.
    const bool best = evaluation.loss < progress_.best_test_loss;
    progress_.epochs_completed = epoch + 1;
    progress_.last_test_loss = evaluation.loss;
    progress_.last_test_accuracy = evaluation.accuracy;
    if (best) {
      progress_.best_test_loss = evaluation.loss;
      progress_.best_epoch = epoch + 1;
      progress_.epochs_without_improvement = 0;
    } else {
      ++progress_.epochs_without_improvement;
    }
    if (!options_.checkpoint_dir.empty()) save_checkpoints(best);
    ++summary.epochs_this_run;

    EpochReport report;
    report.epoch = epoch + 1;
    report.epochs = options_.epochs;
    report.train_loss = metrics.train_loss;
    report.test_loss = evaluation.loss;
    report.test_accuracy = evaluation.accuracy;
    report.samples_per_second = metrics.train_samples / std::max(metrics.train_seconds, 1e-9);
    report.seconds = seconds_since(epoch_start);
    report.best = best;
    printer_.finish_epoch(report);
  }
  summary.stopped_early = patience_exhausted() && progress_.epochs_completed < options_.epochs;
  if (summary.stopped_early) {
    printer_.message("early stopping after epoch " + std::to_string(progress_.epochs_completed) +
                     ": no lower test loss for " + std::to_string(options_.early_stopping_patience) +
                     " epochs (best " + std::to_string(progress_.best_test_loss) + " at epoch " +
                     std::to_string(progress_.best_epoch) + ")");
  }
  summary.epochs_run = progress_.epochs_completed;
  summary.final_test_loss = progress_.last_test_loss;
  summary.final_test_accuracy = progress_.last_test_accuracy;
  summary.best_epoch = progress_.best_epoch;
  summary.best_test_loss = progress_.best_test_loss;
  summary.samples_per_second = train_seconds > 0 ? train_samples / train_seconds : 0;
  summary.parameter_digests = parameter_digests();
  summary.wall_seconds = seconds_since(start);
  return summary;
}

}  // namespace train_mnist
