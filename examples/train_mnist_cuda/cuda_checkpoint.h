// Checkpoints of train_mnist_cuda: parameters, Adam's state and the training
// progress, with the model's signature, in one file written atomically by
// rank 0 (chorus::write_file_atomically: temporary file, fsync, rename). LibTorch's
// archive format is not available here, so the file is not interchangeable
// with train_mnist's. The header is chorus/checked_file.h's.
//
// File layout (integers and floats little-endian):
//   "CHORUS-MNIST-CUDA-CHECKPOINT 2\n" (2: the XXH3 checksum; 1 had FNV-1a)
//   u64 payload length, u64 XXH3-64 checksum of the payload (chorus::checksum64)
//   payload:
//     u64 length + signature text (mlp_signature())
//     i64 epochs_completed, f64 best_test_loss, i64 best_epoch,
//     i64 epochs_without_improvement, f64 last_test_loss, f64 last_test_accuracy
//     i64 adam_step
//     3 x (u64 count + count float32): parameters, Adam's m, Adam's v
// The length and checksum name a truncated or corrupt file before anything
// is parsed; a file for another model is named as such.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace train_mnist_cuda {

// What a resumed run needs besides the parameters and Adam's state.
struct TrainingProgress {
  int64_t epochs_completed = 0;
  double best_test_loss = std::numeric_limits<double>::infinity();
  int64_t best_epoch = 0;  // 1-based; 0: none yet
  int64_t epochs_without_improvement = 0;
  double last_test_loss = std::numeric_limits<double>::quiet_NaN();
  double last_test_accuracy = std::numeric_limits<double>::quiet_NaN();
};

struct CheckpointState {
  TrainingProgress progress;
  int64_t adam_step = 0;          // optimizer steps taken
  std::vector<float> parameters;  // kParameterCount each, layout of mlp_layout.h
  std::vector<float> adam_m;
  std::vector<float> adam_v;
};

// The file's bytes (header + payload). Throws chorus::Error when a vector
// does not hold kParameterCount values.
std::string encode_checkpoint(const CheckpointState& state);

// Checks and parses the bytes of `path`. Throws chorus::Error naming `path`
// when they are truncated, corrupt, or written for another model.
CheckpointState decode_checkpoint(const std::string& bytes, const std::string& path);

// Reads and decodes `path`; throws chorus::Error naming it when it cannot.
CheckpointState load_checkpoint(const std::string& path);

std::string last_checkpoint_path(const std::string& directory);  // <dir>/last.ckpt
std::string best_checkpoint_path(const std::string& directory);  // <dir>/best.ckpt

}  // namespace train_mnist_cuda
