// Where a train_mnist run starts from: a checkpoint (--resume), an elastic
// commit (--elastic) or rank 0's fresh model; the warm-up's position; and
// what the checkpoints and commits hold.
#include <algorithm>
#include <chrono>
#include <string>

#include "trainer.h"

namespace train_mnist {
namespace {

using Clock = std::chrono::steady_clock;
namespace ct = chorus::torch;

}  // namespace

bool Trainer::restore_elastic() {
  const auto start = Clock::now();
  if (!elastic_->restore()) {
    printer_.message("elastic: no commit yet: starting from scratch on " + std::to_string(size_) + " ranks");
    return false;
  }
  // The commit's extras carry the progress as checkpoints do (one
  // early-stopping update per completed epoch).
  stopping_.load(extras_, "early_stopping");
  last_test_accuracy_ = read_progress(extras_).last_test_accuracy;
  resume_sample_ = elastic_->sample();
  // The committed optimizer carries the learning rate of the committing
  // run's size; this run's replicas set it again.
  ct::set_learning_rate(*adam_, options_.lr * layout_.data_parallel_size);
  printer_.message("elastic: resumed from commit " + std::to_string(elastic_->last_commit()) + " (epoch " +
                   std::to_string(elastic_->epoch() + 1) + ", sample " + std::to_string(resume_sample_) +
                   " of its permutation) written by " + std::to_string(elastic_->committed_size()) +
                   " ranks, now on " + std::to_string(size_) + " ranks, restart " +
                   std::to_string(ct::ElasticState::restart_count()) + ", restored in " +
                   std::to_string(seconds_since(start)) + " s");
  return true;
}

void Trainer::commit(int64_t epoch, int64_t sample) {
  write_progress(stopping_, last_test_accuracy_, extras_);
  elastic_->set_position(epoch, sample);
  elastic_->commit();
  steps_since_commit_ = 0;
}

ct::CheckpointContents Trainer::checkpoint_contents() {
  write_progress(stopping_, last_test_accuracy_, extras_);
  return train_mnist::checkpoint_contents(*model_, *adam_, scaler_, extras_);
}

void Trainer::restore_and_synchronize() {
  if (!options_.checkpoint_dir.empty()) {
    ct::CheckpointManagerOptions manager;
    manager.directory = options_.checkpoint_dir;
    manager.keep_last = static_cast<int>(options_.keep_checkpoints);
    manager.name = "train_mnist.checkpoint";
    checkpoints_.emplace(manager);
    if (options_.resume) {
      // Rank 0 reads the newest checkpoint; every rank loads its bytes.
      checkpoints_->restore_latest(checkpoint_contents());
      stopping_.load(extras_, "early_stopping");
      last_test_accuracy_ = read_progress(extras_).last_test_accuracy;
    }
  }
  if (elastic_) {
    // restore() makes every rank equal (the commit, or rank 0's state);
    // --elastic refuses --resume, so the checkpoints are only written.
    restore_elastic();
    return;
  }
  // Every rank builds the whole model, so rank 0's whole model is every
  // stage's reference; a stage's optimizer covers its part only, and fresh
  // optimizers (no resume with a pipeline) are equal already. (After a
  // resume the states are equal already; this costs one broadcast.)
  ct::broadcast_parameters(*model_, 0);
  if (!pipeline_) ct::broadcast_optimizer_state(*adam_, 0);
  if (options_.resume) {
    printer_.message("resumed from " + checkpoints_->checkpoint_path(stopping_.updates()) +
                     " after epoch " + std::to_string(stopping_.updates()));
  }
}

void Trainer::start_warmup(int64_t epoch, int64_t sample) {
  if (options_.warmup_epochs <= 0) return;
  // Optimizer steps per epoch on this run's ranks; a resumed position
  // (a sample of the epoch's permutation) maps to the step it reached.
  const int64_t per_step = options_.batch_size * options_.accumulate;
  const int64_t steps = (sampler_.num_samples() + per_step - 1) / per_step;
  warmup_ = std::make_unique<ct::LearningRateWarmup>(*adam_, options_.lr, options_.warmup_epochs, steps,
                                                     layout_.data_parallel_size);
  warmup_->set_position(epoch, std::min(steps - 1, sample / layout_.data_parallel_size / per_step));
}

}  // namespace train_mnist
