// Reading (and, for tests and tools, writing) MNIST in its IDX format.
//
// An IDX file is a big-endian header, a magic number 0x000008NN (NN: the
// number of dimensions; 08 says unsigned bytes) and one uint32 per dimension,
// followed by the bytes themselves. MNIST has an images file (N x 28 x 28,
// magic 0x00000803) and a labels file (N, magic 0x00000801) per split.
//
// Every problem (missing file, wrong magic, a size that does not match the
// header, labels above 9, image and label counts that differ) throws
// chorus::Error naming the file and what was expected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace train_mnist {

constexpr uint32_t kIdxImagesMagic = 0x00000803;
constexpr uint32_t kIdxLabelsMagic = 0x00000801;
constexpr int64_t kMnistSide = 28;

// The contents of an images file: count images of rows x cols bytes, row-major.
struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;
};

IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);
void write_idx_images(const std::string& path, const IdxImages& images);
void write_idx_labels(const std::string& path, const std::vector<uint8_t>& labels);

// The file names of the standard MNIST distribution.
enum class MnistSplit { kTrain, kTest };
std::string mnist_images_file(MnistSplit split);  // "train-images-idx3-ubyte", "t10k-..."
std::string mnist_labels_file(MnistSplit split);

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
