// Checkpoints of train_mnist: model, optimizer, training progress and the
// model's signature, in one file written atomically.
//
// File layout: the line "CHORUS-MNIST-CHECKPOINT 1\n", the payload's length
// (8 bytes) and its FNV-1a 64-bit checksum (8 bytes), both little-endian,
// then the payload: a LibTorch archive with keys "signature" (see
// ModelSignature), "progress.*", "model" and "optimizer". The length and the
// checksum let a truncated or corrupt file be named as such before LibTorch
// parses anything.
//
// Writing goes to a temporary file in the same directory, which is flushed
// to disk (fsync) and then renamed over the target, and the directory is
// fsynced: a crash or a failed write leaves the previous file intact.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <torch/optim/optimizer.h>

#include "atomic_file.h"  // write_file_atomically, which writes checkpoints
#include "models.h"

namespace train_mnist {

// What a resumed run needs besides the model and the optimizer.
struct TrainingProgress {
  int64_t epochs_completed = 0;
  double best_test_loss = std::numeric_limits<double>::infinity();
  int64_t best_epoch = 0;  // 1-based; 0: none yet
  int64_t epochs_without_improvement = 0;
  double last_test_loss = std::numeric_limits<double>::quiet_NaN();
  double last_test_accuracy = std::numeric_limits<double>::quiet_NaN();
};

// The checkpoint file's bytes (header + payload).
std::string encode_checkpoint(const Classifier& model, const torch::optim::Optimizer& optimizer,
                              const TrainingProgress& progress);

// Verifies the bytes of `path` (magic, length, checksum) and loads them into
// `model` and `optimizer`. Throws chorus::Error naming `path` when the file
// is missing, truncated, corrupt, or was written for another model. Those
// are all detected before anything is loaded, so model and optimizer are
// then unchanged (the model also when the archive itself is damaged).
TrainingProgress decode_checkpoint(const std::string& bytes, const std::string& path,
                                   Classifier& model, torch::optim::Optimizer& optimizer);

// Reads a whole file; throws chorus::Error naming it when it cannot.
std::string read_checkpoint_file(const std::string& path);
TrainingProgress load_checkpoint(const std::string& path, Classifier& model,
                                 torch::optim::Optimizer& optimizer);

// The files train_mnist keeps in its checkpoint directory.
std::string last_checkpoint_path(const std::string& directory);  // <dir>/last.ckpt
std::string best_checkpoint_path(const std::string& directory);  // <dir>/best.ckpt

}  // namespace train_mnist
