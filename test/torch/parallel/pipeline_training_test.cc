// Pipeline training under real mpirun ranks against an independent
// reference: every rank also trains a copy of the whole model locally (same
// seed, same global batches, plain LibTorch, no Chorus) and the stage's
// parameters, its pipeline's losses and the pipeline's inference must be
// bit-identical to the copy's after N steps. Layouts by job size:
// np 2: S=2 (D=1); np 3: S=3; np 4: S=2 x D=2 and S=4; each with GPipe and
// 1F1B. With D > 1 each stage's gradients are averaged by a
// DistributedOptimizer over the stage's data-parallel process set.
//
// The reference computes what the pipelines compute, in their order: each
// pipeline's rows split by chunk(M), each micro-batch's loss / M backward in
// micro-batch order (both schedules run the backwards in that order), the
// pipelines' sums averaged as Chorus averages (chorus_average.h). That is
// full-batch training up to the order of the sums; with the order the same
// too, any CPU gives both the same bits, where a tolerance against the full
// batch would depend on how the CPU's kernels (OpenBLAS picks them per
// processor) round.
#include <memory>
#include <string>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/pipeline/pipeline.h"
#include "support/chorus_average.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

namespace ct = chorus::torch;
using ::testing::HasSubstr;

constexpr int kPipelineSteps = 4;
constexpr int64_t kBatchPerPipeline = 8;

torch::nn::Sequential make_pipeline_model() {
  torch::manual_seed(1234);
  return torch::nn::Sequential(torch::nn::Linear(5, 12), torch::nn::Tanh(),
                               torch::nn::Linear(12, 12), torch::nn::ReLU(),
                               torch::nn::Linear(12, 8), torch::nn::Tanh(), torch::nn::Linear(8, 2));
}

torch::Tensor mse(const torch::Tensor& output, const torch::Tensor& target) {
  return torch::mse_loss(output, target);
}

// The global batch of step `step`: D pipelines' batches, one after the other.
std::pair<torch::Tensor, torch::Tensor> global_batch(int step, int pipelines) {
  torch::manual_seed(100 + static_cast<uint64_t>(step));
  return {torch::randn({kBatchPerPipeline * pipelines, 5}),
          torch::randn({kBatchPerPipeline * pipelines, 2})};
}

class PipelineTrainingTest : public TorchSuite {
 protected:
  void expect_matches_reference(int stages, ct::PipelineSchedule schedule, int micro_batches) {
    SCOPED_TRACE(std::string(ct::pipeline_schedule_name(schedule)) + " S=" +
                 std::to_string(stages) + " M=" + std::to_string(micro_batches));
    const auto layout = ct::PipelineLayout::make(size(), rank(), stages);
    const int D = layout.data_parallel_size;

    // The reference: the whole model, one process, each pipeline's rows as
    // the pipeline computes them, the pipelines' gradients averaged.
    auto reference = make_pipeline_model();
    torch::optim::SGD reference_sgd(reference->parameters(), torch::optim::SGDOptions(0.05));
    const auto reference_parameters = reference->parameters();
    std::vector<double> reference_losses;  // of this rank's pipeline's rows
    for (int step = 0; step < kPipelineSteps; ++step) {
      auto [x, y] = global_batch(step, D);
      std::vector<std::vector<torch::Tensor>> gradients(reference_parameters.size());
      for (int pipeline = 0; pipeline < D; ++pipeline) {
        reference_sgd.zero_grad();
        const auto inputs = x.narrow(0, pipeline * kBatchPerPipeline, kBatchPerPipeline).chunk(micro_batches, 0);
        const auto targets = y.narrow(0, pipeline * kBatchPerPipeline, kBatchPerPipeline).chunk(micro_batches, 0);
        torch::Tensor total;
        for (size_t m = 0; m < inputs.size(); ++m) {
          auto loss = mse(reference->forward(inputs[m]), targets[m]) / micro_batches;
          loss.backward();
          total = total.defined() ? total + loss.detach() : loss.detach();
        }
        if (pipeline == layout.pipeline) reference_losses.push_back(total.item<double>());
        for (size_t i = 0; i < reference_parameters.size(); ++i) {
          gradients[i].push_back(reference_parameters[i].grad().clone());
        }
      }
      for (size_t i = 0; i < reference_parameters.size(); ++i) {
        reference_parameters[i].mutable_grad() = chorus_test::chorus_average(gradients[i]);
      }
      reference_sgd.step();
    }

    // The pipeline: this rank's stage of its pipeline.
    auto model = make_pipeline_model();
    ct::PipelineOptions options;
    options.micro_batches = micro_batches;
    options.schedule = schedule;
    options.batch_size = kBatchPerPipeline;
    options.name = "pp." + std::string(ct::pipeline_schedule_name(schedule)) + std::to_string(stages) +
                   "." + std::to_string(micro_batches);
    ct::Pipeline pipeline(model, layout, options, ct::make_chorus_stage_link());
    torch::optim::SGD sgd(pipeline.part()->parameters(), torch::optim::SGDOptions(0.05));
    std::unique_ptr<ct::DistributedOptimizer> averaged;
    const ct::DataParallelSets data_parallel = ct::create_data_parallel_sets(layout);
    if (D > 1) {
      ct::DistributedOptimizerOptions averaging;
      averaging.process_set = data_parallel.mine;
      averaging.backward_passes_per_step = micro_batches;
      averaging.name_prefix = options.name + ".grad";
      averaged = std::make_unique<ct::DistributedOptimizer>(sgd, pipeline.part()->named_parameters(),
                                                           averaging);
    }
    for (int step = 0; step < kPipelineSteps; ++step) {
      auto [x, y] = global_batch(step, D);
      auto mine_x = x.narrow(0, layout.pipeline * kBatchPerPipeline, kBatchPerPipeline);
      auto mine_y = y.narrow(0, layout.pipeline * kBatchPerPipeline, kBatchPerPipeline);
      if (averaged) {
        averaged->zero_grad();
      } else {
        sgd.zero_grad();
      }
      auto loss = pipeline.train_step(layout.first_stage() ? mine_x : torch::Tensor(),
                                      layout.last_stage() ? mine_y : torch::Tensor(), mse);
      ASSERT_EQ(loss.defined(), layout.last_stage());
      if (loss.defined()) {
        EXPECT_EQ(loss.item<double>(), reference_losses[static_cast<size_t>(step)]) << "step " << step;
      }
      if (averaged) {
        averaged->step();
      } else {
        sgd.step();
      }
    }
    auto expected = reference->named_parameters();
    ASSERT_GT(pipeline.part()->named_parameters().size(), 0u);
    for (const auto& p : pipeline.part()->named_parameters()) {
      EXPECT_TRUE(torch::equal(p.value(), expected[p.key()]))
          << "parameter " << p.key() << " on " << layout.describe() << " differs by up to "
          << (p.value() - expected[p.key()]).abs().max().item<double>();
    }
    // Inference through the pipeline equals the reference's forward.
    auto [x, y] = global_batch(kPipelineSteps, D);
    auto out = pipeline.forward(layout.first_stage() ? x : torch::Tensor());
    if (layout.last_stage()) {
      EXPECT_TRUE(torch::equal(out, reference->forward(x)));
    } else {
      EXPECT_FALSE(out.defined());
    }
    ct::remove_data_parallel_sets(data_parallel);
  }

  std::vector<int> stage_counts() const {
    if (size() == 4) return {2, 4};
    return {size()};
  }
};

TEST_F(PipelineTrainingTest, GPipeEqualsSingleProcessTraining) {
  for (int S : stage_counts()) {
    for (int M : {1, 2, 4}) expect_matches_reference(S, ct::PipelineSchedule::kGPipe, M);
  }
}

TEST_F(PipelineTrainingTest, OneFOneBEqualsSingleProcessTraining) {
  for (int S : stage_counts()) {
    for (int M : {1, 4, 8}) expect_matches_reference(S, ct::PipelineSchedule::k1F1B, M);
  }
}

TEST_F(PipelineTrainingTest, LayoutsThatDoNotFitTheJobAreErrorsOnEveryRankBeforeAnySend) {
  const int stages = size() + 1;  // never divides the job
  try {
    ct::PipelineLayout::make(size(), rank(), stages);
    FAIL() << "accepted " << stages << " stages on " << size() << " ranks";
  } catch (const chorus::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "pipeline layout: " + std::to_string(size()) +
                  " ranks cannot be split into pipelines of " + std::to_string(stages) +
                  " stages: expected a number of ranks that is a multiple of " +
                  std::to_string(stages));
  }
  // More stages than layers: refused by the Pipeline itself.
  auto tiny = torch::nn::Sequential(torch::nn::Linear(2, 2));
  ct::PipelineOptions options;
  try {
    ct::Pipeline pipeline(tiny, ct::PipelineLayout::make(size(), rank(), size()), options,
                          ct::make_chorus_stage_link());
    FAIL() << "split 1 layer into " << size() << " stages";
  } catch (const chorus::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("a model of 1 layers cannot be split into"));
  }
  options.micro_batches = 3;
  options.batch_size = kBatchPerPipeline;
  EXPECT_THROW(ct::Pipeline(make_pipeline_model(), ct::PipelineLayout::make(size(), rank(), size()),
                            options, ct::make_chorus_stage_link()),
               chorus::Error);
  chorus::barrier();
}

}  // namespace
}  // namespace chorus_torch_test
