// MNIST as LibTorch tensors, from the IDX reader of idx_files.h (torch-free,
// in examples/mnist_common/, shared with train_mnist_cuda).
#pragma once

#include <string>

#include <torch/types.h>

#include "idx_files.h"

namespace train_mnist {

// One split, preloaded so batches are index_select()s of two tensors.
struct MnistData {
  torch::Tensor images;  // [N, 1, 28, 28] float32, normalised with MNIST's mean and std
  torch::Tensor labels;  // [N] int64, 0-9
  int64_t size() const { return labels.size(0); }
};

// Reads <data_dir>/<split's two files>, checks them against each other
// (28 x 28 images, equal counts, labels 0-9) and normalises the pixels.
MnistData load_mnist(const std::string& data_dir, MnistSplit split);

}  // namespace train_mnist
