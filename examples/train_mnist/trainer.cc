#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <utility>

#include <torch/nn/functional/loss.h>
#include <torch/nn/utils/clip_grad.h>

#include "chorus/checked_file.h"
#include "example_error.h"

namespace train_mnist {
namespace {

using Clock = std::chrono::steady_clock;
namespace ct = chorus::torch;

// Evaluation forward passes take this many images at once (memory bound).
constexpr int64_t kEvalChunk = 1000;

// XXH3 of each parameter's bytes, then of those hashes in order.
uint64_t digest_of(const torch::nn::Module& model) {
  std::vector<uint64_t> hashes;
  for (const auto& parameter : model.parameters()) {
    const torch::Tensor data = parameter.detach().contiguous();
    hashes.push_back(chorus::checksum64(data.data_ptr(), data.nbytes()));
  }
  return chorus::checksum64(hashes.data(), hashes.size() * sizeof(uint64_t));
}

ct::EarlyStoppingOptions stopping_options(const TrainOptions& options) {
  ct::EarlyStoppingOptions stopping;
  stopping.patience = options.early_stopping_patience;  // 0: never stops
  // The test loss is allreduced already, the same bits everywhere: rank 0's
  // value is every rank's (an average could change its last bit).
  stopping.agreement = ct::EarlyStoppingOptions::Agreement::kRootValue;
  stopping.name = "train_mnist.early_stopping";
  return stopping;
}

chorus::torch::GradScalerOptions scaler_options(chorus::torch::AmpMode amp) {
  chorus::torch::GradScalerOptions options;
  options.enabled = amp != chorus::torch::AmpMode::kOff;
  options.name = "train_mnist.grad_scaler";
  return options;
}

}  // namespace

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Trainer::Trainer(TrainOptions options, std::ostream& out, bool live_progress)
    : options_(std::move(options)),
      printer_(out, chorus::rank() == 0, live_progress),
      rank_(chorus::rank()),
      size_(chorus::size()),
      // Before anything else: a bad layout is an error on every rank at once.
      layout_(ct::PipelineLayout::make(size_, rank_, options_.pipeline_stages)),
      train_(load_mnist(options_.data_dir, MnistSplit::kTrain)),
      test_(load_mnist(options_.data_dir, MnistSplit::kTest)),
      sampler_(train_.size(), ct::DistributedSampler::Options{true, false, options_.seed},
               layout_.data_parallel_size, layout_.pipeline),
      batches_(train_, sampler_, options_),
      stopping_(stopping_options(options_)),
      last_test_accuracy_(std::nan("")),
      scaler_(scaler_options(options_.amp)) {
  // The same answer on every rank, so every rank refuses together.
  ct::check_amp_supported(options_.amp);
  torch::set_num_threads(options_.threads);
  torch::manual_seed(options_.seed);
  model_ = make_model(options_.model);
  ct::DistributedOptimizerOptions distributed;
  distributed.compression = options_.compression;
  distributed.backward_passes_per_step = static_cast<int>(options_.accumulate);
  // Adam's learning rate grows with the number of model replicas.
  const double lr = options_.lr * layout_.data_parallel_size;
  if (!options_.pipelined()) {
    adam_ = std::make_unique<torch::optim::Adam>(model_->parameters(), torch::optim::AdamOptions(lr));
    optimizer_ = std::make_unique<ct::DistributedOptimizer>(*adam_, model_->named_parameters(),
                                                            distributed);
    if (options_.elastic) {
      ct::ElasticStateOptions elastic;
      elastic.directory = options_.elastic_dir;
      elastic.name = "train_mnist.elastic";
      // The same contents as the checkpoints: model (with its signature),
      // Adam, the gradient scaler and the progress in extras_.
      elastic_ = std::make_unique<ct::ElasticState>(
          train_mnist::checkpoint_contents(*model_, *adam_, scaler_, extras_), elastic);
    }
    return;
  }
  ct::check_micro_batches(options_.batch_size, options_.micro_batches);
  ct::PipelineOptions pipeline;
  pipeline.micro_batches = options_.micro_batches;
  pipeline.schedule = options_.schedule;
  pipeline.batch_size = options_.batch_size;
  pipeline.name = "train_mnist.pp";
  pipeline.trace_path = options_.pipeline_trace;  // or CHORUS_PIPELINE_TRACE
  pipeline_ = std::make_unique<ct::Pipeline>(model_->layers(), layout_, pipeline,
                                             ct::make_chorus_stage_link());
  adam_ = std::make_unique<torch::optim::Adam>(pipeline_->part()->parameters(),
                                               torch::optim::AdamOptions(lr));
  const ct::DataParallelSets data_parallel = ct::create_data_parallel_sets(layout_);
  if (layout_.data_parallel_size > 1) {
    distributed.process_set = data_parallel.mine;
    distributed.backward_passes_per_step = options_.micro_batches;
    distributed.name_prefix = "grad.stage" + std::to_string(layout_.stage);
    optimizer_ = std::make_unique<ct::DistributedOptimizer>(
        *adam_, pipeline_->part()->named_parameters(), distributed);
  }
}

void Trainer::zero_grad() {
  if (optimizer_) {
    optimizer_->zero_grad();
  } else {
    adam_->zero_grad();
  }
}

void Trainer::optimizer_step() {
  ++optimizer_steps_;
  if (warmup_) warmup_->step();
  if (optimizer_ && scaler_.is_enabled()) {
    // unscale_ waits for the averaged gradients; a non-finite one on any
    // rank is non-finite in the average on every rank, so all skip alike.
    if (options_.clip_grad_norm > 0) {
      scaler_.unscale_(*optimizer_);
      torch::nn::utils::clip_grad_norm_(model_->parameters(), options_.clip_grad_norm);
    }
    scaler_.step(*optimizer_);
    scaler_.update();
  } else if (!optimizer_) {
    adam_->step();
  } else if (options_.clip_grad_norm > 0) {
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

Trainer::EpochMetrics Trainer::train_epoch(int64_t epoch, int64_t first_sample) {
  model_->train();
  batches_.start_epoch(epoch, first_sample);
  const int64_t samples = sampler_.num_samples();
  printer_.start_epoch(epoch + 1, options_.epochs, samples * layout_.data_parallel_size);

  const auto start = Clock::now();
  double loss_sum = 0;
  int64_t passes_in_step = 0;
  int64_t trained = 0;  // this rank's (this pipeline's) samples
  int64_t dealt = 0;    // this rank's samples in the batches so far
  while (const auto example = batches_.next()) {
    const int64_t count = example->data.size(0);
    const int64_t begin = dealt;  // this rank's samples before this batch
    dealt += count;
    const torch::Tensor& images = example->data;
    const torch::Tensor& labels = example->target;
    if (pipeline_) {
      // Only whole micro-batches: the at most M-1 samples left over at the
      // end of an epoch are skipped.
      const int64_t usable = count / options_.micro_batches * options_.micro_batches;
      if (usable == 0) break;
      zero_grad();
      const double batch_loss = train_batch(images.narrow(0, 0, usable), labels.narrow(0, 0, usable));
      optimizer_step();
      if (layout_.last_stage()) loss_sum += batch_loss * static_cast<double>(usable);
      trained += usable;
      printer_.update((begin + count) * layout_.data_parallel_size, batch_loss);
      continue;
    }
    if (passes_in_step == 0) zero_grad();
    torch::Tensor loss;
    {
      // Forward only: backward runs outside autocast, as PyTorch advises.
      ct::CpuAutocast autocast(options_.amp);
      loss = torch::nn::functional::cross_entropy(model_->forward(images), labels);
    }
    // Accumulated passes sum into .grad: scale so the step sees their mean.
    scaler_.scale(options_.accumulate > 1 ? loss / static_cast<double>(options_.accumulate) : loss)
        .backward();
    ++passes_in_step;
    trained += count;
    // The last batch of the epoch steps too, with the passes it has, so no
    // gradient carries over into the next epoch (or a checkpoint).
    if (passes_in_step == options_.accumulate || begin + count >= samples) {
      optimizer_step();
      passes_in_step = 0;
      // Between steps, not at the epoch's end (run() commits after evaluating).
      if (elastic_ && ++steps_since_commit_ >= options_.commit_every && begin + count < samples) {
        commit(epoch, sampler_.global_position(begin + count));
      }
    }
    const double batch_loss = loss.item<double>();
    loss_sum += batch_loss * static_cast<double>(count);
    printer_.update((begin + count) * layout_.data_parallel_size, batch_loss);
  }
  EpochMetrics metrics;
  metrics.train_seconds = seconds_since(start);
  metrics.train_samples = trained * layout_.data_parallel_size;
  metrics.train_loss =
      ct::allreduce_metric(loss_sum, "train_mnist.train_loss_sum", chorus::ReduceOp::kSum) /
      static_cast<double>(metrics.train_samples);
  return metrics;
}

double Trainer::train_batch(const torch::Tensor& images, const torch::Tensor& labels) {
  const auto cross_entropy = [](const torch::Tensor& logits, const torch::Tensor& targets) {
    return torch::nn::functional::cross_entropy(logits, targets);
  };
  const torch::Tensor loss = pipeline_->train_step(images, labels, cross_entropy);
  return loss.defined() ? loss.item<double>() : std::nan("");
}

std::pair<double, double> Trainer::evaluate_chunk(const torch::Tensor& chunk) {
  const torch::Tensor labels = test_.labels.index_select(0, chunk);
  const torch::Tensor images = test_.images.index_select(0, chunk);
  const torch::Tensor logits = pipeline_ ? pipeline_->forward(images) : model_->forward(images);
  if (!logits.defined()) return {0.0, 0.0};  // the output is on the last stage
  const double loss = torch::nn::functional::cross_entropy(
                          logits, labels,
                          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                          .item<double>();
  return {loss, logits.argmax(1).eq(labels).sum().item<double>()};
}

Trainer::Evaluation Trainer::evaluate() {
  model_->eval();
  torch::NoGradGuard no_grad;
  // Replica r (a rank, or a pipeline) takes test samples r, r + replicas,
  // ...; sums over ranks give the exact average over the whole test set
  // (in a pipeline only the last stage, where the output is, adds to them).
  const int replicas = layout_.data_parallel_size;
  const torch::Tensor mine = torch::arange(layout_.pipeline, test_.size(), replicas, torch::kInt64);
  double loss_sum = 0;
  double correct = 0;
  for (int64_t begin = 0; begin < mine.size(0); begin += kEvalChunk) {
    const auto [loss, right] =
        evaluate_chunk(mine.narrow(0, begin, std::min(kEvalChunk, mine.size(0) - begin)));
    loss_sum += loss;
    correct += right;
  }
  const double total = static_cast<double>(test_.size());
  Evaluation evaluation;
  evaluation.loss =
      ct::allreduce_metric(loss_sum, "train_mnist.test_loss_sum", chorus::ReduceOp::kSum) / total;
  evaluation.accuracy =
      ct::allreduce_metric(correct, "train_mnist.test_correct", chorus::ReduceOp::kSum) / total;
  return evaluation;
}

std::vector<uint64_t> Trainer::parameter_digests() {
  // In a pipeline, of the stage's part: equal across its data-parallel set.
  const uint64_t mine = pipeline_ ? digest_of(*pipeline_->part()) : digest_of(*model_);
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
  summary.pipeline_stages = layout_.stages;
  summary.micro_batches = options_.micro_batches;
  summary.schedule = pipeline_ ? ct::pipeline_schedule_name(options_.schedule) : "none";
  summary.data_parallel_size = layout_.data_parallel_size;
  double train_seconds = 0;
  int64_t train_samples = 0;
  start_warmup(stopping_.updates(), resume_sample_);
  while (stopping_.updates() < options_.epochs && !stopping_.should_stop()) {
    const auto epoch_start = Clock::now();
    const int64_t epoch = stopping_.updates();  // epochs completed
    const EpochMetrics metrics = train_epoch(epoch, resume_sample_);
    resume_sample_ = 0;
    const Evaluation evaluation = evaluate();
    train_seconds += metrics.train_seconds;
    train_samples += metrics.train_samples;

    // Every rank has the same (allreduced) test loss; EarlyStopping agrees
    // on rank 0's anyway, so every rank takes the same decisions.
    stopping_.update(evaluation.loss);
    last_test_accuracy_ = evaluation.accuracy;
    const bool best = stopping_.improved();
    if (checkpoints_) checkpoints_->save(checkpoint_contents(), epoch + 1, evaluation.loss);
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
    if (elastic_) commit(epoch + 1, 0);
  }
  summary.stopped_early = stopping_.should_stop() && stopping_.updates() < options_.epochs;
  if (summary.stopped_early) {
    printer_.message("early stopping after epoch " + std::to_string(stopping_.updates()) +
                     ": no lower test loss for " + std::to_string(options_.early_stopping_patience) +
                     " epochs (best " + std::to_string(stopping_.best()) + " at epoch " +
                     std::to_string(stopping_.best_update()) + ")");
  }
  summary.epochs_run = stopping_.updates();
  summary.final_test_loss = stopping_.last();
  summary.final_test_accuracy = last_test_accuracy_;
  summary.best_epoch = stopping_.best_update();
  summary.best_test_loss = stopping_.best();
  summary.samples_per_second = train_seconds > 0 ? train_samples / train_seconds : 0;
  summary.parameter_digests = parameter_digests();
  summary.wall_seconds = seconds_since(start);
  summary.mean_step_seconds = optimizer_steps_ > 0 ? train_seconds / static_cast<double>(optimizer_steps_) : 0;
  summary.amp = ct::amp_mode_name(options_.amp);
  summary.amp_skipped_steps = scaler_.skipped_steps();
  summary.amp_final_scale = scaler_.get_scale();
  if (pipeline_) pipeline_->write_trace();
  return summary;
}

}  // namespace train_mnist
