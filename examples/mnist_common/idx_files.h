// Reading (and, for tests and tools, writing) MNIST in its IDX format,
// without LibTorch: shared by train_mnist (which makes tensors of it,
// mnist_idx.h) and train_mnist_cuda.
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

// One split as read from its two files, checked against each other.
struct MnistRaw {
  IdxImages images;             // count x 28 x 28 bytes
  std::vector<uint8_t> labels;  // count labels, 0-9
  int64_t size() const { return images.count; }
};

// MNIST's pixel mean and standard deviation over its training set (of x/255):
// a pixel p becomes (p / 255 - kMnistPixelMean) / kMnistPixelStd.
constexpr float kMnistPixelMean = 0.1307f;
constexpr float kMnistPixelStd = 0.3081f;

// Reads <data_dir>/<split's two files> and checks them against each other
// (28 x 28 images, equal counts, at least one image, labels 0-9).
MnistRaw load_mnist_raw(const std::string& data_dir, MnistSplit split);

}  // namespace train_mnist
