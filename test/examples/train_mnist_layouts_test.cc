// train_mnist's Trainer under real MPI ranks in its layouts: data parallelism
// and pipeline stages train like one process (bit for bit), bad layouts fail
// every rank before training, and the prefetching loader gives the
// preloaded batches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include <torch/torch.h>

#include "chorus/torch/pipeline/model_split.h"
#include "reference_training.h"
#include "train_mnist_fixture.h"

namespace train_mnist_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using train_mnist::IdxImages;
using train_mnist::ModelKind;
using train_mnist::RunSummary;
using train_mnist::TrainOptions;

// --pipeline-stages 2 computes what one process computes on the same
// batches (reference_training.h: each batch's micro-batches through the
// whole model, loss / M backward in micro-batch order, the pipelines'
// gradients averaged as Chorus does): each rank's stage ends bit-identical
// to the reference's same layers, for the MLP and the CNN and both
// schedules, and so do the test loss and accuracy; the summary records the
// layout.
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

      // The same computation in this process without Chorus, bit for bit
      // (reference_training.h): any CPU gives both the same bits, so the
      // comparison is equality, not a tolerance.
      const ReferenceRun reference = train_reference(
          o, chorus_test::world_size(), train_mnist::load_mnist(o.data_dir, train_mnist::MnistSplit::kTrain),
          train_mnist::load_mnist(o.data_dir, train_mnist::MnistSplit::kTest));
      const int stage = trainer.layout().stage;
      auto mine = ct::stage_part(trainer.model().layers(), stages, stage)->named_parameters();
      auto expected = ct::stage_part(reference.model->layers(), stages, stage)->named_parameters();
      ASSERT_EQ(mine.size(), expected.size());
      for (const auto& p : expected) {
        EXPECT_TRUE(torch::equal(mine[p.key()], p.value()))
            << "layer parameter " << p.key() << " of stage " << stage << " differs by up to "
            << (mine[p.key()] - p.value()).abs().max().item<double>();
      }
      EXPECT_EQ(summary.parameter_digests, reference.parameter_digests);
      EXPECT_EQ(summary.final_test_loss, reference.test_loss);
      EXPECT_EQ(summary.final_test_accuracy, reference.test_accuracy);
    }
  }
}

// Data parallelism on every rank of the job equals the reference bit for
// bit: each replica's batch through the same operations, the replicas'
// gradients averaged in Chorus's documented order, Adam at lr x ranks.
TEST_F(TrainMnistParallel, DataParallelTrainsLikeOneProcess) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kCnn}) {
    SCOPED_TRACE(train_mnist::model_kind_name(kind));
    TrainOptions o = options(2, "");
    o.model = kind;
    std::vector<torch::Tensor> parameters;
    const RunSummary summary = train(o, &parameters);
    const ReferenceRun reference = train_reference(
        o, chorus_test::world_size(), train_mnist::load_mnist(o.data_dir, train_mnist::MnistSplit::kTrain),
        train_mnist::load_mnist(o.data_dir, train_mnist::MnistSplit::kTest));
    const auto expected = reference.model->parameters();
    ASSERT_EQ(parameters.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(torch::equal(parameters[i], expected[i]))
          << "parameter " << i << " differs by up to " << (parameters[i] - expected[i]).abs().max().item<double>();
    }
    EXPECT_EQ(summary.parameter_digests, reference.parameter_digests);
    EXPECT_EQ(summary.final_test_loss, reference.test_loss);
    EXPECT_EQ(summary.final_test_accuracy, reference.test_accuracy);
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
