// load_mnist_raw, the torch-free reader both MNIST examples use.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "idx_files.h"
#include "test_files.h"

namespace train_mnist_cuda_test {
namespace {

using train_mnist::MnistSplit;
using train_mnist_test::error_of;
using train_mnist_test::TempDir;
using ::testing::HasSubstr;

void write_split(const TempDir& dir, MnistSplit split, int64_t images, const std::vector<uint8_t>& labels,
                 int64_t side = 28) {
  train_mnist::IdxImages idx;
  idx.count = images;
  idx.rows = side;
  idx.cols = side;
  idx.pixels.assign(static_cast<size_t>(images * side * side), 0);
  for (size_t i = 0; i < idx.pixels.size(); ++i) idx.pixels[i] = static_cast<uint8_t>(i % 251);
  train_mnist::write_idx_images(dir.file(train_mnist::mnist_images_file(split)), idx);
  train_mnist::write_idx_labels(dir.file(train_mnist::mnist_labels_file(split)), labels);
}

TEST(MnistRaw, ReadsAndChecksASplit) {
  TempDir dir;
  write_split(dir, MnistSplit::kTest, 3, {7, 0, 9});
  const train_mnist::MnistRaw raw = train_mnist::load_mnist_raw(dir.path(), MnistSplit::kTest);
  EXPECT_EQ(raw.size(), 3);
  EXPECT_EQ(raw.labels, (std::vector<uint8_t>{7, 0, 9}));
  ASSERT_EQ(raw.images.pixels.size(), 3u * 28 * 28);
  EXPECT_EQ(raw.images.pixels[300], 300 % 251);
}

TEST(MnistRaw, ProblemsNameTheFiles) {
  TempDir dir;
  EXPECT_THAT(error_of([&] { train_mnist::load_mnist_raw(dir.path(), MnistSplit::kTrain); }),
              HasSubstr("Cannot open MNIST file '" + dir.path() + "/train-images-idx3-ubyte'"));
  write_split(dir, MnistSplit::kTrain, 2, {1, 2, 3});
  EXPECT_THAT(error_of([&] { train_mnist::load_mnist_raw(dir.path(), MnistSplit::kTrain); }),
              HasSubstr("disagree: 2 images but 3 labels (expected one label per image)"));
  write_split(dir, MnistSplit::kTrain, 1, {1}, 14);
  EXPECT_THAT(error_of([&] { train_mnist::load_mnist_raw(dir.path(), MnistSplit::kTrain); }),
              HasSubstr("holds 14x14 images, expected 28x28"));
  write_split(dir, MnistSplit::kTrain, 0, {});
  EXPECT_THAT(error_of([&] { train_mnist::load_mnist_raw(dir.path(), MnistSplit::kTrain); }),
              HasSubstr("holds no images, expected at least one"));
}

}  // namespace
}  // namespace train_mnist_cuda_test
