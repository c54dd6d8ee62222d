// Whole pipelines within one process: each stage runs on its own thread and
// the stages talk through an in-process StageLink. N steps of pipeline
// training (GPipe and 1F1B, several S and M) must leave the parameters and
// losses bit-identical to a copy of the model trained in one piece on the
// same micro-batches; model parallelism (M=1) driven by loss.backward() on
// the last stage must give the full model's gradients, bit for bit.
//
// Why equality: the reference runs the operations the stages run, on the
// same tensors, in the same order, so any CPU gives both the same bits. The
// full batch in one piece would add the same numbers in another order, and
// how far that drifts over a few SGD steps depends on the CPU's kernels
// (OpenBLAS picks them per processor): no fixed tolerance holds everywhere.
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "chorus/status.h"
#include "chorus/torch/pipeline/pipeline.h"
#include "in_process_stage_link.h"

namespace chorus {
namespace torch {
namespace {

constexpr int kSteps = 3;
constexpr int64_t kBatch = 12;

::torch::nn::Sequential make_model() {
  ::torch::manual_seed(7);
  return ::torch::nn::Sequential(::torch::nn::Linear(6, 16), ::torch::nn::Tanh(),
                               ::torch::nn::Linear(16, 16), ::torch::nn::ReLU(),
                               ::torch::nn::Linear(16, 8), ::torch::nn::Tanh(),
                               ::torch::nn::Linear(8, 3));
}

::torch::Tensor mse(const ::torch::Tensor& output, const ::torch::Tensor& target) {
  return ::torch::mse_loss(output, target);
}

struct Batches {
  std::vector<::torch::Tensor> inputs, targets;
};

Batches make_batches() {
  ::torch::manual_seed(11);
  Batches b;
  for (int i = 0; i < kSteps; ++i) {
    b.inputs.push_back(::torch::randn({kBatch, 6}));
    b.targets.push_back(::torch::randn({kBatch, 3}));
  }
  return b;
}

// The reference: the whole model in one piece, plain SGD, each batch split
// as the pipeline splits it (chunk(M)), each micro-batch's loss / M backward
// in micro-batch order (both schedules run the backwards in that order),
// accumulating into .grad: full-batch training up to the order of the sums,
// and with that order the same too. `losses` gets each step's sum of the
// micro-batches' losses, added in that order as train_step adds them.
std::vector<float> train_reference(const Batches& batches, int micro_batches, std::vector<float>* losses) {
  auto model = make_model();
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  for (int i = 0; i < kSteps; ++i) {
    sgd.zero_grad();
    const auto inputs = batches.inputs[static_cast<size_t>(i)].chunk(micro_batches, 0);
    const auto targets = batches.targets[static_cast<size_t>(i)].chunk(micro_batches, 0);
    ::torch::Tensor total;
    for (size_t m = 0; m < inputs.size(); ++m) {
      auto loss = mse(model->forward(inputs[m]), targets[m]) / micro_batches;
      loss.backward();
      total = total.defined() ? total + loss.detach() : loss.detach();
    }
    losses->push_back(total.item<float>());
    sgd.step();
  }
  std::vector<float> flat;
  for (const auto& p : model->parameters()) {
    auto c = p.detach().flatten();
    flat.insert(flat.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return flat;
}

void expect_pipeline_matches(PipelineSchedule schedule, int stages, int micro_batches) {
  SCOPED_TRACE(std::string(pipeline_schedule_name(schedule)) + " S=" + std::to_string(stages) +
               " M=" + std::to_string(micro_batches));
  const Batches batches = make_batches();
  std::vector<float> reference_losses;
  const auto reference = train_reference(batches, micro_batches, &reference_losses);

  auto model = make_model();  // the stages' parts are disjoint: one shared model
  auto mailbox = std::make_shared<InProcessMailbox>();
  std::vector<std::vector<float>> losses(static_cast<size_t>(stages));
  std::vector<std::string> errors(static_cast<size_t>(stages));
  std::vector<std::thread> threads;
  for (int s = 0; s < stages; ++s) {
    threads.emplace_back([&, s] {
      try {
        auto layout = PipelineLayout::make(stages, s, stages);
        PipelineOptions options;
        options.micro_batches = micro_batches;
        options.schedule = schedule;
        Pipeline pipeline(model, layout, options,
                          std::make_shared<InProcessStageLink>(mailbox, s));
        ::torch::optim::SGD sgd(pipeline.part()->parameters(), ::torch::optim::SGDOptions(0.1));
        for (int i = 0; i < kSteps; ++i) {
          sgd.zero_grad();
          // Every stage passes the batch; only the first and last read it.
          auto loss = pipeline.train_step(batches.inputs[static_cast<size_t>(i)],
                                          batches.targets[static_cast<size_t>(i)], mse);
          EXPECT_EQ(loss.defined(), layout.last_stage());
          if (loss.defined()) losses[static_cast<size_t>(s)].push_back(loss.item<float>());
          sgd.step();
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(s)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(mailbox->pending(), 0u);
  const auto& last_losses = losses.back();
  ASSERT_EQ(last_losses.size(), reference_losses.size());
  for (size_t i = 0; i < last_losses.size(); ++i) {
    EXPECT_EQ(last_losses[i], reference_losses[i]) << "step " << i;
  }
  size_t k = 0;
  for (const auto& p : model->parameters()) {
    auto c = p.detach().flatten();
    for (int64_t j = 0; j < c.numel(); ++j, ++k) {
      ASSERT_EQ(c[j].item<float>(), reference[k]) << "parameter element " << k;
    }
  }
  EXPECT_EQ(k, reference.size());
}

TEST(PipelineInProcessTest, GPipeEqualsFullBatchTraining) {
  ::torch::set_num_threads(1);
  for (int S : {1, 2, 3, 4}) {
    for (int M : {1, 2, 4, 12}) expect_pipeline_matches(PipelineSchedule::kGPipe, S, M);
  }
}

TEST(PipelineInProcessTest, OneFOneBEqualsFullBatchTraining) {
  ::torch::set_num_threads(1);
  for (int S : {1, 2, 3, 4, 7}) {
    for (int M : {1, 3, 6}) expect_pipeline_matches(PipelineSchedule::k1F1B, S, M);
  }
}

TEST(PipelineInProcessTest, ModelParallelBackwardIsDrivenByTheLastStagesLoss) {
  auto model = make_model();
  auto reference = make_model();
  auto x = ::torch::randn({5, 6});
  auto y = ::torch::randn({5, 3});
  mse(reference->forward(x), y).backward();
  auto mailbox = std::make_shared<InProcessMailbox>();
  const int S = 3;
  std::vector<std::thread> threads;
  for (int s = 0; s < S; ++s) {
    threads.emplace_back([&, s] {
      auto layout = PipelineLayout::make(S, s, S);
      PipelineStage stage(stage_part(model, S, s), layout,
                          std::make_shared<InProcessStageLink>(mailbox, s));
      auto out = stage.forward(x, "mp.0");
      if (layout.last_stage()) {
        mse(out, y).backward();  // sends the gradient back through every stage
      } else {
        stage.backward("mp.0");
      }
      stage.finish();
    });
  }
  for (auto& t : threads) t.join();
  auto got = model->named_parameters();
  for (const auto& p : reference->named_parameters()) {
    ASSERT_TRUE(got[p.key()].grad().defined()) << p.key();
    EXPECT_TRUE(::torch::equal(got[p.key()].grad(), p.value().grad())) << p.key();
  }
}

TEST(PipelineInProcessTest, BadBatchesAndMissingInputsAreClearErrors) {
  auto model = make_model();
  PipelineOptions options;
  options.micro_batches = 5;
  options.batch_size = 12;
  try {
    Pipeline pipeline(model, PipelineLayout::make(1, 0, 1), options, nullptr);
    FAIL() << "accepted 5 micro-batches of a batch of 12";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline layout: 5 micro-batches do not divide a batch of 12 samples per "
                 "pipeline: expected a number of micro-batches that divides it");
  }
  options.batch_size = 0;
  options.micro_batches = 2;
  Pipeline single(model, PipelineLayout::make(1, 0, 1), options, nullptr);
  EXPECT_THROW(single.train_step(::torch::randn({3, 6}), ::torch::randn({3, 3}), mse), Error);
  EXPECT_THROW(single.train_step(::torch::Tensor(), ::torch::randn({4, 3}), mse), Error);
  try {
    options.micro_batches = 1;
    Pipeline too_many(model, PipelineLayout::make(8, 0, 8), options,
                      std::make_shared<InProcessStageLink>(std::make_shared<InProcessMailbox>(), 0));
    FAIL() << "split 7 layers into 8 stages";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline layout: a model of 7 layers cannot be split into 8 stages: expected at "
                 "most one stage per layer");
  }
}

}  // namespace
}  // namespace torch
}  // namespace chorus
