// train_mnist's Trainer under real MPI ranks, on a tiny generated dataset:
// a run interrupted after an epoch and resumed ends bit-identical to an
// uninterrupted one; the warm-up follows its rule; early stopping stops every
// rank at the same epoch; a checkpoint that rank 0 cannot read or write fails
// every rank with rank 0's message, and a failed run leaves the last good
// checkpoint intact. (Pipelines and the loader: train_mnist_layouts_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include <torch/torch.h>

#include "support/file_size_limit.h"
#include "train_mnist_fixture.h"

namespace train_mnist_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using train_mnist::IdxImages;
using train_mnist::ModelKind;
using train_mnist::RunSummary;
using train_mnist::TrainOptions;

struct ResumeCase {
  ModelKind model;
  int64_t accumulate;
  double clip;
  chorus::torch::Compression compression;
  chorus::torch::AmpMode amp = chorus::torch::AmpMode::kOff;
  double warmup_epochs = 0;
};

class ResumeEqualsUninterrupted : public TrainMnistParallel,
                                  public ::testing::WithParamInterface<ResumeCase> {};

TEST_P(ResumeEqualsUninterrupted, BitForBit) {
  const ResumeCase c = GetParam();
  auto configure = [&](int64_t epochs, const std::string& dir) {
    TrainOptions o = options(epochs, dir);
    o.model = c.model;
    o.accumulate = c.accumulate;
    o.clip_grad_norm = c.clip;
    o.compression = c.compression;
    o.amp = c.amp;
    o.warmup_epochs = c.warmup_epochs;
    return o;
  };
  std::vector<torch::Tensor> uninterrupted, after_one, resumed;
  const RunSummary reference = train(configure(3, "a"), &uninterrupted);
  ASSERT_EQ(reference.epochs_run, 3);
  // "Interrupted" after epoch 1: a run that ends there, leaving checkpoint-1.ckpt...
  train(configure(1, "b"), &after_one);
  // ... and a fresh one that resumes from it.
  TrainOptions resume = configure(3, "b");
  resume.resume = true;
  const RunSummary summary = train(resume, &resumed);
  EXPECT_EQ(summary.epochs_run, 3);
  EXPECT_EQ(summary.epochs_this_run, 2);
  EXPECT_EQ(summary.final_test_loss, reference.final_test_loss);
  EXPECT_EQ(summary.final_test_accuracy, reference.final_test_accuracy);
  EXPECT_EQ(summary.best_epoch, reference.best_epoch);

  ASSERT_EQ(resumed.size(), uninterrupted.size());
  bool trained_on = false;
  for (size_t i = 0; i < resumed.size(); ++i) {
    EXPECT_TRUE(torch::equal(resumed[i], uninterrupted[i]))
        << "parameter " << i << " differs by up to "
        << (resumed[i] - uninterrupted[i]).abs().max().item<double>();
    trained_on = trained_on || !torch::equal(after_one[i], uninterrupted[i]);
  }
  EXPECT_TRUE(trained_on) << "epochs 2-3 changed nothing: the comparison proves nothing";
  // All replicas agree too.
  EXPECT_EQ(summary.parameter_digests, std::vector<uint64_t>(2, summary.parameter_digests[0]));
}

INSTANTIATE_TEST_SUITE_P(
    Configurations, ResumeEqualsUninterrupted,
    ::testing::Values(ResumeCase{ModelKind::kMlp, 1, 0.0, chorus::torch::Compression::kNone},
                      ResumeCase{ModelKind::kCnn, 2, 0.5, chorus::torch::Compression::kFP16},
                      // The gradient scaler's state comes back from the checkpoint.
                      ResumeCase{ModelKind::kMlp, 1, 0.0, chorus::torch::Compression::kNone,
                                 chorus::torch::AmpMode::kBF16},
                      // The warm-up resumes where epoch 1 left it (it spans 2.5 epochs).
                      ResumeCase{ModelKind::kMlp, 1, 0.0, chorus::torch::Compression::kNone,
                                 chorus::torch::AmpMode::kOff, 2.5}),
    [](const auto& param_info) {
      if (param_info.param.amp != chorus::torch::AmpMode::kOff) return "MlpAmpBf16";
      if (param_info.param.warmup_epochs > 0) return "MlpWarmup";
      return param_info.param.model == ModelKind::kMlp ? "MlpPlain" : "CnnAccumulateClipFp16";
    });

TEST_F(TrainMnistParallel, LearnsTheGeneratedDataAndKeepsLatestAndBestCheckpoints) {
  // The tiny dataset is learnable, so the resume comparison above compares
  // real training.
  const RunSummary summary = train(options(4, "l"));
  EXPECT_GE(summary.final_test_accuracy, 0.9);
  torch::manual_seed(0);
  auto model = train_mnist::make_model(ModelKind::kMlp);
  torch::optim::Adam adam(model->parameters());
  const auto last = train_mnist::load_checkpoint(train_mnist::latest_checkpoint_path(root_ + "/l"), *model, adam);
  EXPECT_EQ(train_mnist::latest_checkpoint_path(root_ + "/l"), root_ + "/l/checkpoint-4.ckpt");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/l/checkpoint-3.ckpt")) << "--keep-checkpoints 1";
  EXPECT_EQ(last.epochs_completed, 4);
  EXPECT_EQ(last.last_test_loss, summary.final_test_loss);
  const auto best = train_mnist::load_checkpoint(train_mnist::best_checkpoint_path(root_ + "/l"), *model, adam);
  EXPECT_EQ(best.epochs_completed, summary.best_epoch);
  EXPECT_EQ(best.last_test_loss, summary.best_test_loss);
}

TEST_F(TrainMnistParallel, WarmupRaisesTheLearningRateToLrTimesRanks) {
  // Goyal et al.'s rule written out: after the last step of epoch 1 of a
  // 2-epoch warm-up, (steps - 1) / steps of an epoch has passed.
  TrainOptions o = options(1, "");
  o.warmup_epochs = 2;
  std::ostringstream out;
  train_mnist::Trainer trainer(o, out, /*live_progress=*/false);
  trainer.run();
  const int n = chorus_test::world_size();
  const double steps = std::ceil((256.0 / n) / 16.0);  // 256 samples, batch 16, no padding
  const double passed = (steps - 1) / steps;
  const double expected = o.lr * (1 + (n - 1) * passed / 2);
  EXPECT_DOUBLE_EQ(chorus::torch::get_learning_rate(trainer.optimizer()), expected);
  // Past the warm-up: lr x ranks.
  o.warmup_epochs = 0.5;
  train_mnist::Trainer past(o, out, false);
  past.run();
  EXPECT_DOUBLE_EQ(chorus::torch::get_learning_rate(past.optimizer()), o.lr * n);
}

TEST_F(TrainMnistParallel, EarlyStoppingStopsEveryRankAtTheSameEpoch) {
  // Test labels are noise: the test loss is lowest early and rises as the
  // model fits the training set.
  TrainOptions o = options(40, "");
  o.data_dir = root_ + "/noisy";
  o.early_stopping_patience = 2;
  o.lr = 0.01;
  const RunSummary summary = train(o);
  EXPECT_TRUE(summary.stopped_early);
  EXPECT_LT(summary.epochs_run, 40);
  EXPECT_EQ(summary.epochs_run, summary.best_epoch + 2) << "stopped before the patience ran out";
  const std::vector<int> stopped_at = chorus_test::exchange(static_cast<int>(summary.epochs_run));
  EXPECT_EQ(stopped_at, std::vector<int>(stopped_at.size(), stopped_at[0]));
  const std::vector<int> best = chorus_test::exchange(static_cast<int>(summary.best_epoch));
  EXPECT_EQ(best, std::vector<int>(best.size(), best[0]));
}

TEST_F(TrainMnistParallel, CorruptCheckpointFailsEveryRankNamingTheFile) {
  train(options(1, "c"));
  const std::string path = train_mnist::latest_checkpoint_path(root_ + "/c");
  chorus_test::test_barrier();
  if (chorus_test::world_rank() == 0) {
    const std::string bytes = read_bytes(path);
    write_bytes(path, bytes.substr(0, bytes.size() / 2));
  }
  chorus_test::test_barrier();
  TrainOptions o = options(2, "c");
  o.resume = true;
  EXPECT_THAT(training_error(o), HasSubstr("Checkpoint '" + path + "' is truncated"));
}

TEST_F(TrainMnistParallel, CheckpointOfAnotherModelFailsEveryRank) {
  train(options(1, "f"));
  TrainOptions o = options(2, "f");
  o.resume = true;
  o.model = ModelKind::kCnn;
  EXPECT_THAT(training_error(o),
              AllOf(HasSubstr("Checkpoint '" + train_mnist::latest_checkpoint_path(root_ + "/f") + "'"),
                    HasSubstr("was written for another model (model mlp vs cnn")));
}

TEST_F(TrainMnistParallel, ResumeWithoutACheckpointFailsEveryRank) {
  TrainOptions o = options(2, "empty");
  o.resume = true;
  EXPECT_THAT(training_error(o),
              HasSubstr("No checkpoint in '" + root_ + "/empty' to resume from"));
}

TEST_F(TrainMnistParallel, UnusableCheckpointFolderFailsEveryRank) {
  EXPECT_THAT(training_error(options(1, "data/train-labels-idx1-ubyte")),
              AllOf(HasSubstr("Cannot use checkpoint folder '" + root_ + "/data/train-labels-idx1-ubyte'"),
                    HasSubstr("expected a writable folder")));
}

TEST_F(TrainMnistParallel, FailedCheckpointWriteFailsEveryRankAndKeepsTheLastGoodOne) {
  std::vector<torch::Tensor> after_one;
  train(options(1, "w"), &after_one);
  TrainOptions o = options(3, "w");
  o.resume = true;
  std::string error;
  {
    chorus_test::FileSizeLimit limit(64 * 1024, chorus_test::world_rank() == 0);
    error = training_error(o);
  }
  EXPECT_THAT(error, AllOf(HasSubstr("Cannot write checkpoint '" + root_ + "/w/checkpoint-2.ckpt'"),
                           HasSubstr("File too large")));
  const std::string path = train_mnist::latest_checkpoint_path(root_ + "/w");
  EXPECT_EQ(path, root_ + "/w/checkpoint-1.ckpt");
  // The checkpoint of epoch 1 is still there and whole.
  torch::manual_seed(0);
  auto model = train_mnist::make_model(ModelKind::kMlp);
  torch::optim::Adam adam(model->parameters());
  const train_mnist::TrainingProgress progress = train_mnist::load_checkpoint(path, *model, adam);
  EXPECT_EQ(progress.epochs_completed, 1);
  const auto parameters = model->parameters();
  for (size_t i = 0; i < parameters.size(); ++i) EXPECT_TRUE(torch::equal(parameters[i], after_one[i]));
}

}  // namespace
}  // namespace train_mnist_test
