// The training loop of train_mnist, as a class so tests can run it in-process.
//
// Every rank builds the model from the same seed, then takes rank 0's
// parameters and optimizer state (broadcast_parameters and
// broadcast_optimizer_state), so all replicas start equal even when the seed
// or a checkpoint is only right on rank 0. Each epoch a DistributedSampler
// seeded with --seed gives every rank a disjoint share of the training set
// (set_epoch reshuffles); batches are index_select()s of the preloaded
// tensors. The DistributedOptimizer averages gradients across ranks. After
// each epoch every rank evaluates its share of the test set and the sums are
// allreduced, so all ranks see the same test loss and take the same
// early-stopping decision (chorus::torch::EarlyStopping, agreeing on rank 0's
// value). Checkpoints go through chorus::torch::CheckpointManager: rank 0
// writes them; on --resume rank 0 reads the newest and every rank loads its
// bytes (model, Adam, gradient scaler, progress).
//
// With --elastic (under chorusrun --elastic) a chorus::torch::ElasticState
// replaces the checkpoint resume: every --commit-every optimizer steps, and
// after every epoch's evaluation, the model, Adam's state, the epoch, the
// position in the epoch's sample permutation and the progress are committed
// on every host; a restarted job resumes from the newest commit on however
// many ranks it now has, with Adam's learning rate set for that number and
// the rest of the epoch's samples dealt over the new ranks
// (DistributedSampler::set_epoch(epoch, first_sample)). commit() throws
// chorus::torch::HostsChanged when chorusrun asks the job to grow.
//
// With --pipeline-stages S > 1 the model's layers() are split over S
// consecutive ranks (chorus::torch::Pipeline): the sampler then shares the
// training set among the D = size / S pipelines, each batch goes through the
// pipeline in micro-batches, and each stage's DistributedOptimizer averages
// its gradients over the stage's data-parallel set (plain Adam when D = 1).
// Evaluation runs through the pipelines and the last stages' sums are
// allreduced, so every rank still sees the same test metrics.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <ostream>

#include <torch/optim/adam.h>

#include "batch_source.h"
#include "checkpoint.h"
#include "chorus/torch.h"
#include "mnist_idx.h"
#include "models.h"
#include "progress.h"
#include "run_summary.h"
#include "train_options.h"

namespace train_mnist {

// Seconds on the steady clock from `start` until now: what the trainer's
// reports and timings count.
double seconds_since(std::chrono::steady_clock::time_point start);

class Trainer {
 public:
  // chorus::init() must have been called. Loads the data (every rank reads
  // the files itself) and builds the model and optimizer; throws
  // chorus::Error when the data cannot be read.
  Trainer(TrainOptions options, std::ostream& out, bool live_progress);

  // Trains (resuming first when options.resume) until options.epochs or
  // early stopping. Collective: every rank calls it with the same options.
  // Throws chorus::Error on every rank when a checkpoint cannot be read or
  // written on rank 0.
  RunSummary run();

  Classifier& model() { return *model_; }
  const chorus::torch::PipelineLayout& layout() const { return layout_; }
  torch::optim::Adam& optimizer() { return *adam_; }

 private:
  struct EpochMetrics {
    double train_loss = 0;
    double train_seconds = 0;
    int64_t train_samples = 0;  // of all ranks
  };
  struct Evaluation {
    double loss = 0;
    double accuracy = 0;
  };

  // Creates the checkpoint folder (rank 0) and, when resuming, loads the
  // newest checkpoint on every rank; then every rank takes rank 0's state.
  void restore_and_synchronize();
  // Trains epoch `epoch` from position first_sample of its permutation.
  EpochMetrics train_epoch(int64_t epoch, int64_t first_sample);
  // --elastic: restores the newest commit (true) or starts equal everywhere.
  bool restore_elastic();
  // --elastic: commits the state at `sample` of epoch `epoch`'s permutation.
  void commit(int64_t epoch, int64_t sample);
  // --warmup-epochs: the schedule, placed at `sample` of epoch `epoch`.
  void start_warmup(int64_t epoch, int64_t sample);
  void optimizer_step();
  void zero_grad();
  // One batch's forward and backward; returns its mean loss where it is
  // known (NaN on pipeline stages other than the last).
  double train_batch(const torch::Tensor& images, const torch::Tensor& labels);
  // Summed cross-entropy and correct predictions of `chunk`'s test samples
  // (zeros on pipeline stages other than the last).
  std::pair<double, double> evaluate_chunk(const torch::Tensor& chunk);
  Evaluation evaluate();
  chorus::torch::CheckpointContents checkpoint_contents();
  std::vector<uint64_t> parameter_digests();

  TrainOptions options_;
  ProgressPrinter printer_;
  int rank_;
  int size_;
  chorus::torch::PipelineLayout layout_;  // 1 stage x size_ replicas without a pipeline
  MnistData train_;
  MnistData test_;
  std::shared_ptr<Classifier> model_;
  std::unique_ptr<torch::optim::Adam> adam_;
  std::unique_ptr<chorus::torch::Pipeline> pipeline_;  // only with --pipeline-stages > 1
  // Null in a pipeline without data parallelism (nothing to average).
  std::unique_ptr<chorus::torch::DistributedOptimizer> optimizer_;
  chorus::torch::DistributedSampler sampler_;
  BatchSource batches_;  // after sampler_ and train_, which it uses
  // One update per epoch with the test loss: the epochs completed, the best
  // epoch and the early-stopping count.
  chorus::torch::EarlyStopping stopping_;
  double last_test_accuracy_;
  std::optional<chorus::torch::CheckpointManager> checkpoints_;  // with --checkpoint-dir
  chorus::torch::CheckpointExtras extras_;  // the progress, as checkpoints carry it
  // Enabled with --amp: scales the loss, skips steps with inf/NaN gradients
  // on any rank. Its state (scale, growth tracker) is in the checkpoints.
  chorus::torch::GradScaler scaler_;
  int64_t optimizer_steps_ = 0;  // this run
  std::unique_ptr<chorus::torch::ElasticState> elastic_;  // only with --elastic
  std::unique_ptr<chorus::torch::LearningRateWarmup> warmup_;  // only with --warmup-epochs
  int64_t resume_sample_ = 0;  // where the first epoch of this run starts
  int64_t steps_since_commit_ = 0;
};

}  // namespace train_mnist
