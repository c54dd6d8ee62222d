#include "trainer.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include "chorus/atomic_file.h"
#include "chorus/checked_file.h"
#include "cuda_check.h"
#include "example_error.h"
#include "host_collectives.h"
#include "idx_files.h"
#include "kernels.h"
#include "chorus/cuda.h"
#include "stream_event.h"

namespace train_mnist_cuda {
namespace {

using Clock = std::chrono::steady_clock;
using train_mnist::fail;

// Evaluation forward passes take this many images at once.
constexpr int kEvalChunk = 1000;

// Slots of Trainer::stats_ (doubles on the GPU that the loss kernel adds to).
enum StatSlot { kEpochLossSum = 0, kBatchLossSum, kEvalLossSum, kEvalCorrect, kStatSlots };

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
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
  return broadcast_string(error, 0, name);
}

chorus::Shape shape_of(const ParameterSlice& slice) {
  return slice.rows == 1 ? chorus::Shape{slice.cols} : chorus::Shape{slice.rows, slice.cols};
}

}  // namespace

Trainer::Trainer(CudaTrainOptions options, int device, std::ostream& out, bool live_progress)
    : options_(std::move(options)),
      printer_(out, chorus::rank() == 0, live_progress),
      rank_(chorus::rank()),
      size_(chorus::size()),
      device_(device),
      max_rows_(static_cast<int>(std::max<int64_t>(options_.batch_size, kEvalChunk))),
      train_(upload_split(train_mnist::MnistSplit::kTrain)),
      test_(upload_split(train_mnist::MnistSplit::kTest)),
      sampler_(train_.size, options_.seed, size_, rank_),
      model_(max_rows_, stream_.get()),
      adam_(AdamSettings{options_.lr * size_}, kParameterCount, stream_.get()),
      epoch_indices_(sampler_.samples_per_rank()),
      batch_images_(static_cast<int64_t>(max_rows_) * kInputs),
      batch_labels_(max_rows_),
      stats_(kStatSlots) {
  // Rank r evaluates test samples r, r + size, ...: the sums over ranks
  // cover the test set exactly once.
  const std::vector<int64_t> mine = strided_shard(test_.size, size_, rank_);
  const std::vector<int32_t> narrow(mine.begin(), mine.end());
  test_indices_ = DeviceBuffer<int32_t>(static_cast<int64_t>(narrow.size()));
  if (!narrow.empty()) {
    CUDA_CHECK(cudaMemcpyAsync(test_indices_.get(), narrow.data(), test_indices_.bytes(), cudaMemcpyHostToDevice,
                               stream_.get()));
  }
  wait_for_stream(stream_.get());
}

Trainer::DeviceSplit Trainer::upload_split(train_mnist::MnistSplit split) {
  const train_mnist::MnistRaw raw = train_mnist::load_mnist_raw(options_.data_dir, split);
  std::vector<float> images(raw.images.pixels.size());
  for (size_t i = 0; i < images.size(); ++i) {
    images[i] = (static_cast<float>(raw.images.pixels[i]) / 255.0f - train_mnist::kMnistPixelMean) /
                train_mnist::kMnistPixelStd;
  }
  const std::vector<int32_t> labels(raw.labels.begin(), raw.labels.end());
  DeviceSplit out;
  out.size = raw.size();
  out.images = DeviceBuffer<float>(static_cast<int64_t>(images.size()));
  out.labels = DeviceBuffer<int32_t>(static_cast<int64_t>(labels.size()));
  CUDA_CHECK(cudaMemcpyAsync(out.images.get(), images.data(), out.images.bytes(), cudaMemcpyHostToDevice,
                             stream_.get()));
  CUDA_CHECK(cudaMemcpyAsync(out.labels.get(), labels.data(), out.labels.bytes(), cudaMemcpyHostToDevice,
                             stream_.get()));
  wait_for_stream(stream_.get());  // before the host vectors go
  return out;
}

void Trainer::restore_and_synchronize() {
  CheckpointState state;
  state.parameters = initial_parameters(options_.seed);
  state.adam_m.assign(static_cast<size_t>(kParameterCount), 0.0f);
  state.adam_v.assign(static_cast<size_t>(kParameterCount), 0.0f);
  const std::string error = rank0_outcome(rank_, "train_mnist_cuda.restore", [&] {
    if (options_.checkpoint_dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(options_.checkpoint_dir, ec);
    if (ec || !std::filesystem::is_directory(options_.checkpoint_dir)) {
      fail("Cannot use --checkpoint-dir '" + options_.checkpoint_dir + "': " +
           (ec ? ec.message() : "not a directory") + " (expected a writable folder)");
    }
    if (options_.resume) state = load_checkpoint(last_checkpoint_path(options_.checkpoint_dir));
  });
  if (!error.empty()) fail(error);

  // Rank 0's state on every rank, whatever the others' seeds or files said.
  broadcast_floats(state.parameters, 0, "train_mnist_cuda.parameters");
  broadcast_floats(state.adam_m, 0, "train_mnist_cuda.adam_m");
  broadcast_floats(state.adam_v, 0, "train_mnist_cuda.adam_v");
  const int64_t adam_step = broadcast_int(state.adam_step, 0, "train_mnist_cuda.adam_step");
  TrainingProgress& p = state.progress;
  progress_.epochs_completed = broadcast_int(p.epochs_completed, 0, "train_mnist_cuda.epochs_completed");
  progress_.best_test_loss = broadcast_double(p.best_test_loss, 0, "train_mnist_cuda.best_test_loss");
  progress_.best_epoch = broadcast_int(p.best_epoch, 0, "train_mnist_cuda.best_epoch");
  progress_.epochs_without_improvement =
      broadcast_int(p.epochs_without_improvement, 0, "train_mnist_cuda.epochs_without_improvement");
  progress_.last_test_loss = broadcast_double(p.last_test_loss, 0, "train_mnist_cuda.last_test_loss");
  progress_.last_test_accuracy = broadcast_double(p.last_test_accuracy, 0, "train_mnist_cuda.last_test_accuracy");
  model_.upload_parameters(state.parameters);
  adam_.restore(adam_step, state.adam_m, state.adam_v);
  if (options_.resume) {
    printer_.message("resumed from " + last_checkpoint_path(options_.checkpoint_dir) + " after epoch " +
                     std::to_string(progress_.epochs_completed));
  }
}

void Trainer::submit_gradients(Layer layer) {
  // One event after both gradients' kernels: the allreduces start once it
  // has fired, on the runtime's side, while this thread queues more work.
  const std::shared_ptr<const chorus::Event> ready = chorus::cuda_event_on(stream_.get());
  const ParameterSlice weight = layer == Layer::kOutputLayer ? kOutputWeight : kHiddenWeight;
  const ParameterSlice bias = layer == Layer::kOutputLayer ? kOutputBias : kHiddenBias;
  for (const ParameterSlice& slice : {weight, bias}) {
    chorus::Tensor gradient(model_.gradients() + slice.offset, chorus::DataType::kFloat32, shape_of(slice),
                            chorus::Device::cuda(device_));
    gradient.ready = ready;
    // The default operation is kAverage: the sum over ranks / ranks.
    pending_.push_back(chorus::allreduce_async(std::string("train_mnist_cuda.grad.") + slice.name, gradient));
  }
}

void Trainer::optimizer_step() {
  // The last step's allreduces have long finished: their errors, if any,
  // surface here (a failure stops the job's runtime anyway).
  for (const chorus::Handle& handle : finishing_) handle.wait();
  finishing_.clear();
  // This step's: the stream waits for each result on the GPU, so Adam is
  // queued at once and this thread goes on (completion_event() returns once
  // the collective is queued on the runtime's stream, and throws its error
  // if it failed before that).
  for (const chorus::Handle& handle : pending_) chorus::cuda_stream_wait(stream_.get(), handle.completion_event());
  finishing_.swap(pending_);
  float grad_scale = 1.0f;
  if (options_.clip_grad_norm > 0) {
    // As torch::nn::utils::clip_grad_norm_ on the averaged gradients.
    const double norm = model_.gradient_norm();
    grad_scale = static_cast<float>(std::min(1.0, options_.clip_grad_norm / (norm + 1e-6)));
  }
  adam_.step(model_.parameters(), model_.gradients(), grad_scale);
}

double Trainer::read_stat(int slot) {
  double value = 0;
  CUDA_CHECK(cudaMemcpyAsync(&value, stats_.get() + slot, sizeof(double), cudaMemcpyDeviceToHost, stream_.get()));
  wait_for_stream(stream_.get());
  return value;
}

Trainer::EpochMetrics Trainer::train_epoch(int64_t epoch) {
  const std::vector<int64_t> indices = sampler_.indices(epoch);
  const int64_t samples = static_cast<int64_t>(indices.size());
  // The previous epoch's copy was waited for at its end (read_stat).
  epoch_indices_host_.assign(indices.begin(), indices.end());
  CUDA_CHECK(cudaMemcpyAsync(epoch_indices_.get(), epoch_indices_host_.data(), epoch_indices_.bytes(),
                             cudaMemcpyHostToDevice, stream_.get()));
  CUDA_CHECK(cudaMemsetAsync(stats_.get() + kEpochLossSum, 0, sizeof(double), stream_.get()));
  printer_.start_epoch(epoch + 1, options_.epochs, samples * size_);

  const auto start = Clock::now();
  int64_t passes_in_step = 0;
  for (int64_t begin = 0; begin < samples; begin += options_.batch_size) {
    const int rows = static_cast<int>(std::min(options_.batch_size, samples - begin));
    // The last batch of the epoch steps too, with the passes it has, so no
    // gradient carries over into the next epoch (or a checkpoint).
    const bool last_pass = passes_in_step + 1 == options_.accumulate || begin + rows >= samples;
    launch_gather_batch(train_.images.get(), train_.labels.get(), epoch_indices_.get() + begin, rows, kInputs,
                        batch_images_.get(), batch_labels_.get(), stream_.get());
    const float* log_probs = model_.forward(batch_images_.get(), rows);
    // The mean over the batch, and over the accumulated passes (train_mnist
    // divides each pass's loss by --accumulate).
    const float grad_scale = 1.0f / static_cast<float>(rows * options_.accumulate);
    CUDA_CHECK(cudaMemsetAsync(stats_.get() + kBatchLossSum, 0, sizeof(double), stream_.get()));
    launch_cross_entropy(log_probs, batch_labels_.get(), rows, kClasses, grad_scale, model_.logits_gradient(),
                         stats_.get() + kEpochLossSum, stats_.get() + kBatchLossSum, nullptr, stream_.get());
    model_.backward(batch_images_.get(), rows, /*accumulate=*/passes_in_step > 0, [&](Layer layer) {
      if (last_pass) submit_gradients(layer);
    });
    ++passes_in_step;
    if (last_pass) {
      optimizer_step();
      passes_in_step = 0;
    }
    const int64_t done = (begin + rows) * size_;
    if (printer_.wants_update(done)) printer_.update(done, read_stat(kBatchLossSum) / rows);
  }
  const double loss_sum = read_stat(kEpochLossSum);  // waits for the epoch's work
  EpochMetrics metrics;
  metrics.train_seconds = seconds_since(start);
  metrics.train_samples = samples * size_;
  metrics.train_loss =
      allreduce_sum({loss_sum}, "train_mnist_cuda.train_loss_sum")[0] / static_cast<double>(metrics.train_samples);
  return metrics;
}

Trainer::Evaluation Trainer::evaluate() {
  CUDA_CHECK(cudaMemsetAsync(stats_.get() + kEvalLossSum, 0, 2 * sizeof(double), stream_.get()));
  for (int64_t begin = 0; begin < test_indices_.count(); begin += kEvalChunk) {
    const int rows = static_cast<int>(std::min<int64_t>(kEvalChunk, test_indices_.count() - begin));
    launch_gather_batch(test_.images.get(), test_.labels.get(), test_indices_.get() + begin, rows, kInputs,
                        batch_images_.get(), batch_labels_.get(), stream_.get());
    const float* log_probs = model_.forward(batch_images_.get(), rows);
    launch_cross_entropy(log_probs, batch_labels_.get(), rows, kClasses, 0.0f, nullptr,
                         stats_.get() + kEvalLossSum, nullptr, stats_.get() + kEvalCorrect, stream_.get());
  }
  const std::vector<double> sums =
      allreduce_sum({read_stat(kEvalLossSum), read_stat(kEvalCorrect)}, "train_mnist_cuda.test_sums");
  const double total = static_cast<double>(test_.size);
  return Evaluation{sums[0] / total, sums[1] / total};
}

void Trainer::save_checkpoints(bool best) {
  const std::string error = rank0_outcome(rank_, "train_mnist_cuda.checkpoint", [&] {
    CheckpointState state;
    state.progress = progress_;
    state.adam_step = adam_.steps();
    state.parameters = model_.download_parameters();
    state.adam_m = adam_.download_m();
    state.adam_v = adam_.download_v();
    const std::string bytes = encode_checkpoint(state);
    chorus::write_file_atomically(last_checkpoint_path(options_.checkpoint_dir), bytes, "checkpoint");
    if (best) chorus::write_file_atomically(best_checkpoint_path(options_.checkpoint_dir), bytes, "checkpoint");
  });
  if (!error.empty()) fail(error);
}

std::vector<uint64_t> Trainer::parameter_digests() {
  const std::vector<float> parameters = model_.download_parameters();
  return allgather_u64(chorus::checksum64(parameters.data(), parameters.size() * sizeof(float)),
                       "train_mnist_cuda.digest");
}

train_mnist::RunSummary Trainer::run() {
  const auto start = Clock::now();
  restore_and_synchronize();

  train_mnist::RunSummary summary;
  summary.world_size = size_;
  summary.data_parallel_size = size_;  // data parallel only
  summary.model = "mlp";
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
    // the progress, and takes the early-stopping decision, identically.
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

    train_mnist::EpochReport report;
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

}  // namespace train_mnist_cuda
