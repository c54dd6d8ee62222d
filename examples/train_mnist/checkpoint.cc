#include "checkpoint.h"

#include <filesystem>

#include "chorus/torch/checkpoint/checkpoint_manager.h"

namespace train_mnist {
namespace {

const char* const kStopping = "early_stopping";
const char* const kAccuracy = "last_test_accuracy";

}  // namespace

void write_progress(const chorus::torch::EarlyStopping& stopping, double last_test_accuracy,
                    chorus::torch::CheckpointExtras& extras) {
  stopping.save(extras, kStopping);
  extras.set_double(kAccuracy, last_test_accuracy);
}

TrainingProgress read_progress(const chorus::torch::CheckpointExtras& extras) {
  chorus::torch::EarlyStopping stopping({});
  stopping.load(extras, kStopping);
  TrainingProgress progress;
  progress.epochs_completed = stopping.updates();
  progress.best_test_loss = stopping.best();
  progress.best_epoch = stopping.best_update();
  progress.epochs_without_improvement = stopping.updates_without_improvement();
  progress.last_test_loss = stopping.last();
  progress.last_test_accuracy = extras.get_double(kAccuracy, progress.last_test_accuracy);
  return progress;
}

chorus::torch::CheckpointContents checkpoint_contents(Classifier& model, torch::optim::Optimizer& optimizer,
                                                      chorus::torch::GradScaler& scaler,
                                                      chorus::torch::CheckpointExtras& extras) {
  chorus::torch::CheckpointContents contents(model, model_kind_name(model.kind()));
  contents.with_optimizer(optimizer).with_scaler(scaler).with_extras(extras);
  return contents;
}

TrainingProgress load_checkpoint(const std::string& path, Classifier& model,
                                 torch::optim::Optimizer& optimizer) {
  std::string file = path;
  if (std::filesystem::is_directory(path)) {
    file = latest_checkpoint_path(path);
    if (file.empty()) file = path + "/checkpoint-<n>.ckpt";  // names the missing file
  }
  chorus::torch::GradScaler scaler;
  chorus::torch::CheckpointExtras extras;
  chorus::torch::load_checkpoint_file(file, checkpoint_contents(model, optimizer, scaler, extras));
  return read_progress(extras);
}

std::string latest_checkpoint_path(const std::string& directory) {
  return chorus::torch::latest_checkpoint_in(directory);
}

std::string best_checkpoint_path(const std::string& directory) { return directory + "/best.ckpt"; }

}  // namespace train_mnist
