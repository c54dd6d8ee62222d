// The fixture of the train_mnist parallel tests: a tiny generated MNIST-like
// dataset in a folder every rank sees, and helpers that train on it.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "support/harness.h"
#include "test_files.h"
#include "trainer.h"

namespace train_mnist_test {

// Writes `count` images whose label k lights up a 7x7 block at a position
// that depends on k (plus noise), so a model can learn them. With
// random_labels, the labels are drawn independently of the images instead.
inline void write_split(const std::string& dir, train_mnist::MnistSplit split, int64_t count, uint32_t seed,
                        bool random_labels) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> noise(0, 60);
  std::uniform_int_distribution<int> label_of(0, 9);
  train_mnist::IdxImages images;
  images.count = count;
  images.rows = images.cols = 28;
  std::vector<uint8_t> labels;
  for (int64_t i = 0; i < count; ++i) {
    const int label = label_of(random);
    const int top = 2 + (label / 5) * 12, left = 1 + (label % 5) * 5;
    for (int r = 0; r < 28; ++r) {
      for (int c = 0; c < 28; ++c) {
        const bool lit = r >= top && r < top + 7 && c >= left && c < left + 7;
        images.pixels.push_back(static_cast<uint8_t>(noise(random) + (lit ? 180 : 0)));
      }
    }
    labels.push_back(static_cast<uint8_t>(random_labels ? label_of(random) : label));
  }
  train_mnist::write_idx_images(dir + "/" + train_mnist::mnist_images_file(split), images);
  train_mnist::write_idx_labels(dir + "/" + train_mnist::mnist_labels_file(split), labels);
}

class TrainMnistParallel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(chorus_test::init_chorus()); }
  static void TearDownTestSuite() { chorus_test::shutdown_chorus(); }

  // A folder every rank sees (same machine), made by rank 0, with a learnable
  // dataset in data/ and one whose test labels are noise in noisy/.
  void SetUp() override {
    root_ = (std::filesystem::temp_directory_path() / ("train_mnist_" + chorus_test::shared_token())).string();
    if (chorus_test::world_rank() == 0) {
      std::filesystem::create_directories(root_ + "/data");
      std::filesystem::create_directories(root_ + "/noisy");
      write_split(root_ + "/data", train_mnist::MnistSplit::kTrain, 256, 1, false);
      write_split(root_ + "/data", train_mnist::MnistSplit::kTest, 64, 2, false);
      write_split(root_ + "/noisy", train_mnist::MnistSplit::kTrain, 256, 1, false);
      write_split(root_ + "/noisy", train_mnist::MnistSplit::kTest, 64, 3, true);
    }
    chorus_test::test_barrier();
  }
  void TearDown() override {
    chorus_test::test_barrier();
    if (chorus_test::world_rank() == 0) std::filesystem::remove_all(root_);
  }

  train_mnist::TrainOptions options(int64_t epochs, const std::string& checkpoints) const {
    train_mnist::TrainOptions options;
    options.epochs = epochs;
    options.batch_size = 16;
    options.data_dir = root_ + "/data";
    options.checkpoint_dir = checkpoints.empty() ? "" : root_ + "/" + checkpoints;
    options.seed = 7;
    return options;
  }

  // Trains with `options`; returns the summary and the final parameters.
  train_mnist::RunSummary train(const train_mnist::TrainOptions& options, std::vector<torch::Tensor>* parameters = nullptr) {
    std::ostringstream out;
    train_mnist::Trainer trainer(options, out, /*live_progress=*/false);
    const train_mnist::RunSummary summary = trainer.run();
    if (parameters) {
      parameters->clear();
      for (const auto& p : trainer.model().parameters()) parameters->push_back(p.detach().clone());
    }
    return summary;
  }

  // The error every rank gets from training with `options`.
  std::string training_error(const train_mnist::TrainOptions& options) {
    return error_of([&] { train(options); });
  }

  std::string root_;
};

}  // namespace train_mnist_test
