// What train_mnist puts in its checkpoints, on chorus::torch's checkpoint
// library (chorus/torch/checkpoint/checkpoint.h, checkpoint_manager.h): the model
// (labelled "mlp" or "cnn" in its signature), Adam's state, the gradient
// scaler's state and, as extras, the early-stopping state (which is the
// training progress: one update per epoch) and the last test accuracy.
// The files: <dir>/checkpoint-<epochs completed>.ckpt (the newest
// --keep-checkpoints of them) and <dir>/best.ckpt (lowest test loss).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <torch/optim/optimizer.h>

#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/early_stopping.h"
#include "models.h"

namespace train_mnist {

// The training progress as a checkpoint records it.
struct TrainingProgress {
  int64_t epochs_completed = 0;
  double best_test_loss = std::numeric_limits<double>::infinity();
  int64_t best_epoch = 0;  // 1-based; 0: none yet
  int64_t epochs_without_improvement = 0;
  double last_test_loss = std::numeric_limits<double>::quiet_NaN();
  double last_test_accuracy = std::numeric_limits<double>::quiet_NaN();
};

// The keys in a checkpoint's extras.
void write_progress(const chorus::torch::EarlyStopping& stopping, double last_test_accuracy,
                    chorus::torch::CheckpointExtras& extras);
TrainingProgress read_progress(const chorus::torch::CheckpointExtras& extras);

// The checkpoint contents of a train_mnist run.
chorus::torch::CheckpointContents checkpoint_contents(Classifier& model, torch::optim::Optimizer& optimizer,
                                                      chorus::torch::GradScaler& scaler,
                                                      chorus::torch::CheckpointExtras& extras);

// Loads one checkpoint file on this process (tests, mnist_checkpoint_diff);
// `path` may be a checkpoint folder, meaning its newest checkpoint. Throws
// chorus::Error naming the file.
TrainingProgress load_checkpoint(const std::string& path, Classifier& model,
                                 torch::optim::Optimizer& optimizer);

// <dir>/checkpoint-<n>.ckpt with the largest n; "" when there is none.
std::string latest_checkpoint_path(const std::string& directory);
std::string best_checkpoint_path(const std::string& directory);  // <dir>/best.ckpt

}  // namespace train_mnist
