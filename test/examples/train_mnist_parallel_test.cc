// train_mnist's Trainer under real MPI ranks, on a tiny generated dataset:
// a run interrupted after an epoch and resumed ends bit-identical to an
// uninterrupted one; early stopping stops every rank at the same epoch; a
// checkpoint that rank 0 cannot read or write fails every rank with rank 0's
// message, and a failed run leaves the last good checkpoint intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include <torch/torch.h>

#include "support/harness.h"
#include "test_files.h"
#include "chorus/torch/model_split.h"
#include "trainer.h"
#include "file_size_limit.h"

namespace train_mnist_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using train_mnist::IdxImages;
using train_mnist::ModelKind;
using train_mnist::RunSummary;
using train_mnist::TrainOptions;

// Writes `count` images whose label k lights up a 7x7 block at a position
// that depends on k (plus noise), so a model can learn them. With
// random_labels, the labels are drawn independently of the images instead.
void write_split(const std::string& dir, train_mnist::MnistSplit split, int64_t count, uint32_t seed,
                 bool random_labels) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> noise(0, 60);
  std::uniform_int_distribution<int> label_of(0, 9);
  IdxImages images;
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

  TrainOptions options(int64_t epochs, const std::string& checkpoints) const {
    TrainOptions options;
    options.epochs = epochs;
    options.batch_size = 16;
    options.data_dir = root_ + "/data";
    options.checkpoint_dir = checkpoints.empty() ? "" : root_ + "/" + checkpoints;
    options.seed = 7;
    return options;
  }

  // Trains with `options`; returns the summary and the final parameters.
  RunSummary train(const TrainOptions& options, std::vector<torch::Tensor>* parameters = nullptr) {
    std::ostringstream out;
    train_mnist::Trainer trainer(options, out, /*live_progress=*/false);
    const RunSummary summary = trainer.run();
    if (parameters) {
      parameters->clear();
      for (const auto& p : trainer.model().parameters()) parameters->push_back(p.detach().clone());
    }
    return summary;
  }

  // The error every rank gets from training with `options`.
  std::string training_error(const TrainOptions& options) {
    return error_of([&] { train(options); });
  }

  std::string root_;
};

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

// --pipeline-stages 2 at np 2 (one pipeline, no data parallelism) computes
// what one process computes on the same batches: the reference trains a
// copy of the model locally, same seed, same data order (a sampler of one
// replica), Adam at lr x 1, each batch's whole micro-batches. Each rank's
// stage must end within 1e-4 of the reference's same layers (Adam over 32
// steps magnifies float rounding), for the MLP and the CNN and both
// schedules; the summary records the layout.
TEST_F(TrainMnistParallel, PipelineStagesTrainLikeOneProcess) {
  namespace ct = chorus::torch;
  const int stages = 2;
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn}) {
    for (ct::PipelineSchedule schedule : {ct::PipelineSchedule::kGPipe, ct::PipelineSchedule::k1F1B}) {
      SCOPED_TRACE(std::string(train_mnist::model_kind_name(kind)) + " " +
                   ct::pipeline_schedule_name(schedule));
      TrainOptions o = options(2, "");
      o.model = kind;
      o.pipeline_stages = stages;
      o.micro_batches = 4;
      o.schedule = schedule;
      std::ostringstream out;
      train_mnist::Trainer trainer(o, out, /*live_progress=*/false);
      const RunSummary summary = trainer.run();
      const int replicas = chorus_test::world_size() / stages;
      EXPECT_EQ(summary.pipeline_stages, stages);
      EXPECT_EQ(summary.micro_batches, 4);
      EXPECT_EQ(summary.schedule, ct::pipeline_schedule_name(schedule));
      EXPECT_EQ(summary.data_parallel_size, replicas);
      ASSERT_EQ(replicas, 1) << "the reference below is one pipeline's";

      const auto train = train_mnist::load_mnist(o.data_dir, train_mnist::MnistSplit::kTrain);
      torch::manual_seed(o.seed);
      auto reference = train_mnist::make_model(kind);
      torch::optim::Adam adam(reference->parameters(), torch::optim::AdamOptions(o.lr));
      ct::DistributedSampler sampler(train.size(), {true, false, o.seed}, 1, 0);
      for (int64_t epoch = 0; epoch < o.epochs; ++epoch) {
        sampler.set_epoch(epoch);
        const auto order = torch::tensor(sampler.indices(), torch::kInt64);
        for (int64_t begin = 0; begin < order.size(0); begin += o.batch_size) {
          const int64_t count = std::min(o.batch_size, order.size(0) - begin) / 4 * 4;
          if (count == 0) break;
          const auto batch = order.narrow(0, begin, count);
          adam.zero_grad();
          torch::nn::functional::cross_entropy(reference->forward(train.images.index_select(0, batch)),
                                               train.labels.index_select(0, batch))
              .backward();
          adam.step();
        }
      }
      const int stage = trainer.layout().stage;
      auto mine = ct::stage_part(trainer.model().layers(), stages, stage)->named_parameters();
      auto expected = ct::stage_part(reference->layers(), stages, stage)->named_parameters();
      ASSERT_EQ(mine.size(), expected.size());
      for (const auto& p : expected) {
        EXPECT_LT((mine[p.key()] - p.value()).abs().max().item<double>(), 1e-4)
            << "layer parameter " << p.key() << " of stage " << stage;
      }
    }
  }
}

TEST_F(TrainMnistParallel, PipelineLayoutErrorsFailEveryRankBeforeTraining) {
  TrainOptions o = options(1, "");
  o.pipeline_stages = chorus_test::world_size() + 1;
  EXPECT_EQ(training_error(o), "pipeline layout: " + std::to_string(chorus_test::world_size()) +
                                   " ranks cannot be split into pipelines of " +
                                   std::to_string(o.pipeline_stages) +
                                   " stages: expected a number of ranks that is a multiple of " +
                                   std::to_string(o.pipeline_stages));
}

// --loader prefetch (the default) hands the trainer exactly the batches of
// the original path (--loader preloaded: index_select on the training
// thread), batch for batch over epochs, at any worker count; so training
// with it ends bit-identical: same parameters, same test loss.
TEST_F(TrainMnistParallel, PrefetchLoaderGivesThePreloadedBatchesAndTheSameTraining) {
  const train_mnist::MnistData data = train_mnist::load_mnist(root_ + "/data", train_mnist::MnistSplit::kTrain);
  TrainOptions preloaded = options(3, "");
  preloaded.loader = TrainOptions::Loader::kPreloaded;
  for (int workers : {1, 3}) {
    TrainOptions prefetch = options(3, "");
    prefetch.loader = TrainOptions::Loader::kPrefetch;
    prefetch.loader_workers = workers;
    prefetch.prefetch_depth = 1 + workers;
    prefetch.batch_size = preloaded.batch_size = 24;  // 128 per rank: a partial last batch
    chorus::torch::DistributedSampler sampler_a(data.size(), {true, false, 7});
    chorus::torch::DistributedSampler sampler_b(data.size(), {true, false, 7});
    train_mnist::BatchSource reference(data, sampler_a, preloaded);
    train_mnist::BatchSource loader(data, sampler_b, prefetch);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      reference.start_epoch(epoch);
      loader.start_epoch(epoch);
      int batches = 0;
      while (auto expected = reference.next()) {
        auto got = loader.next();
        ASSERT_TRUE(got.has_value()) << "epoch " << epoch << " batch " << batches;
        EXPECT_TRUE(torch::equal(got->data, expected->data)) << "epoch " << epoch << " batch " << batches;
        EXPECT_TRUE(torch::equal(got->target, expected->target));
        ++batches;
      }
      EXPECT_FALSE(loader.next().has_value());
      EXPECT_EQ(batches, 6);
    }
  }
  std::vector<torch::Tensor> with_preloaded, with_prefetch;
  preloaded.batch_size = 16;
  const RunSummary a = train(preloaded, &with_preloaded);
  TrainOptions prefetch = options(3, "");
  prefetch.loader_workers = 2;
  const RunSummary b = train(prefetch, &with_prefetch);
  EXPECT_EQ(a.final_test_loss, b.final_test_loss);
  EXPECT_EQ(a.final_test_accuracy, b.final_test_accuracy);
  ASSERT_EQ(with_preloaded.size(), with_prefetch.size());
  for (size_t i = 0; i < with_preloaded.size(); ++i) {
    EXPECT_TRUE(torch::equal(with_preloaded[i], with_prefetch[i])) << "parameter " << i;
  }
}

}  // namespace
}  // namespace train_mnist_test
