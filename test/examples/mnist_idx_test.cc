// The IDX reader against files built byte by byte here (not by the writer
// under test), and its error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "mnist_idx.h"
#include "test_files.h"

namespace train_mnist_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using train_mnist::IdxImages;
using train_mnist::MnistSplit;

std::string be32(uint32_t value) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xff));
  return out;
}

// Pixel j of image i: a pattern that differs between images and positions.
uint8_t pixel(int64_t i, int64_t j) { return static_cast<uint8_t>((i * 7 + j * 3) % 256); }

std::string images_file(uint32_t magic, uint32_t count, uint32_t rows, uint32_t cols,
                        int64_t payload_images) {
  std::string bytes = be32(magic) + be32(count) + be32(rows) + be32(cols);
  for (int64_t i = 0; i < payload_images; ++i) {
    for (int64_t j = 0; j < rows * cols; ++j) bytes.push_back(static_cast<char>(pixel(i, j)));
  }
  return bytes;
}

std::string labels_file(const std::string& labels) { return be32(0x00000801) + be32(labels.size()) + labels; }

class MnistIdx : public ::testing::Test {
 protected:
  std::string images_path(MnistSplit split = MnistSplit::kTrain) {
    return dir_.file(train_mnist::mnist_images_file(split));
  }
  std::string labels_path(MnistSplit split = MnistSplit::kTrain) {
    return dir_.file(train_mnist::mnist_labels_file(split));
  }
  std::string load_error() {
    return error_of([&] { train_mnist::load_mnist(dir_.path(), MnistSplit::kTrain); });
  }
  TempDir dir_;
};

TEST_F(MnistIdx, ReadsHandBuiltFiles) {
  write_bytes(images_path(), images_file(0x00000803, 3, 28, 28, 3));
  write_bytes(labels_path(), labels_file(std::string("\x07\x00\x09", 3)));
  const IdxImages images = train_mnist::read_idx_images(images_path());
  ASSERT_EQ(images.count, 3);
  ASSERT_EQ(images.rows, 28);
  ASSERT_EQ(images.cols, 28);
  ASSERT_EQ(images.pixels.size(), 3u * 784u);
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 784; ++j) ASSERT_EQ(images.pixels[i * 784 + j], pixel(i, j));
  }
  EXPECT_EQ(train_mnist::read_idx_labels(labels_path()), (std::vector<uint8_t>{7, 0, 9}));
}

TEST_F(MnistIdx, WriterProducesTheStandardLayout) {
  IdxImages images;
  images.count = 2;
  images.rows = 28;
  images.cols = 28;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 784; ++j) images.pixels.push_back(pixel(i, j));
  }
  train_mnist::write_idx_images(images_path(), images);
  train_mnist::write_idx_labels(labels_path(), {3, 8});
  EXPECT_EQ(read_bytes(images_path()), images_file(0x00000803, 2, 28, 28, 2));
  EXPECT_EQ(read_bytes(labels_path()), labels_file(std::string("\x03\x08", 2)));
}

TEST_F(MnistIdx, LoadsNormalisedTensors) {
  write_bytes(images_path(), images_file(0x00000803, 2, 28, 28, 2));
  write_bytes(labels_path(), labels_file(std::string("\x04\x02", 2)));
  const train_mnist::MnistData data = train_mnist::load_mnist(dir_.path(), MnistSplit::kTrain);
  ASSERT_EQ(data.images.sizes().vec(), (std::vector<int64_t>{2, 1, 28, 28}));
  ASSERT_EQ(data.images.scalar_type(), torch::kFloat32);
  ASSERT_EQ(data.labels.scalar_type(), torch::kInt64);
  EXPECT_EQ(data.labels[0].item<int64_t>(), 4);
  EXPECT_EQ(data.labels[1].item<int64_t>(), 2);
  const auto flat = data.images.reshape({2, 784});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 784; j += 37) {
      const float expected = (pixel(i, j) / 255.0f - 0.1307f) / 0.3081f;
      ASSERT_NEAR(flat[i][j].item<float>(), expected, 1e-5) << "image " << i << " pixel " << j;
    }
  }
}

TEST_F(MnistIdx, WrongMagicNamesFileAndExpectedMagic) {
  write_bytes(images_path(), images_file(0x00000801, 1, 28, 28, 1));
  write_bytes(labels_path(), labels_file(std::string(1, '\x01')));
  EXPECT_THAT(load_error(), AllOf(HasSubstr("'" + images_path() + "'"),
                                  HasSubstr("magic number 0x00000801, expected 0x00000803")));
}

TEST_F(MnistIdx, TruncatedImagesAreReportedWithExpectedSize) {
  std::string bytes = images_file(0x00000803, 3, 28, 28, 3);
  bytes.resize(bytes.size() - 100);
  write_bytes(images_path(), bytes);
  write_bytes(labels_path(), labels_file(std::string(3, '\x01')));
  EXPECT_THAT(load_error(), AllOf(HasSubstr("'" + images_path() + "'"),
                                  HasSubstr("is 2268 bytes, expected 2368"), HasSubstr("truncated")));
}

TEST_F(MnistIdx, HeaderThatPromisesLessThanTheFileHolds) {
  write_bytes(images_path(), images_file(0x00000803, 2, 28, 28, 3));
  EXPECT_THAT(error_of([&] { train_mnist::read_idx_images(images_path()); }),
              AllOf(HasSubstr("'" + images_path() + "'"), HasSubstr("is 2368 bytes, expected 1584"),
                    HasSubstr("trailing data")));
}

TEST_F(MnistIdx, FileShorterThanItsHeader) {
  write_bytes(labels_path(), be32(0x00000801));
  EXPECT_THAT(error_of([&] { train_mnist::read_idx_labels(labels_path()); }),
              AllOf(HasSubstr("'" + labels_path() + "'"), HasSubstr("is 4 bytes, shorter than the 8-byte IDX header")));
}

TEST_F(MnistIdx, MissingFileIsNamed) {
  EXPECT_THAT(load_error(), AllOf(HasSubstr("Cannot open MNIST file '" + images_path() + "'"),
                                  HasSubstr("No such file or directory"),
                                  HasSubstr("scripts/prepare_mnist.sh")));
  write_bytes(images_path(), images_file(0x00000803, 1, 28, 28, 1));
  EXPECT_THAT(load_error(), HasSubstr("Cannot open MNIST file '" + labels_path() + "'"));
}

TEST_F(MnistIdx, ImageAndLabelCountsMustAgree) {
  write_bytes(images_path(), images_file(0x00000803, 3, 28, 28, 3));
  write_bytes(labels_path(), labels_file(std::string(2, '\x01')));
  EXPECT_THAT(load_error(), AllOf(HasSubstr(images_path()), HasSubstr(labels_path()),
                                  HasSubstr("3 images but 2 labels")));
}

TEST_F(MnistIdx, LabelsAboveNineAreRefused) {
  write_bytes(labels_path(), labels_file(std::string("\x01\x0c\x02", 3)));
  EXPECT_THAT(error_of([&] { train_mnist::read_idx_labels(labels_path()); }),
              AllOf(HasSubstr("'" + labels_path() + "'"), HasSubstr("has label 12 at index 1, expected 0-9")));
}

TEST_F(MnistIdx, ImagesMustBe28By28) {
  write_bytes(images_path(), images_file(0x00000803, 2, 20, 20, 2));
  write_bytes(labels_path(), labels_file(std::string(2, '\x01')));
  EXPECT_THAT(load_error(), AllOf(HasSubstr(images_path()), HasSubstr("holds 20x20 images, expected 28x28")));
}

TEST_F(MnistIdx, TestSplitUsesTheT10kFiles) {
  EXPECT_EQ(train_mnist::mnist_images_file(MnistSplit::kTest), "t10k-images-idx3-ubyte");
  EXPECT_EQ(train_mnist::mnist_labels_file(MnistSplit::kTest), "t10k-labels-idx1-ubyte");
  EXPECT_EQ(train_mnist::mnist_images_file(MnistSplit::kTrain), "train-images-idx3-ubyte");
  EXPECT_EQ(train_mnist::mnist_labels_file(MnistSplit::kTrain), "train-labels-idx1-ubyte");
}

}  // namespace
}  // namespace train_mnist_test
