// A whole pipeline's memory within one process (a thread per stage, the
// in-process StageLink), without MPI: the bytes of CPU tensor storage alive
// at once during a step, counted exactly by test/support/cpu_tensor_bytes.h,
// above what was alive when the step began. The model is S = 4 layers
// Linear(256, 256), one per stage, so every boundary tensor (an activation or
// its gradient) has B = 256 rows x 256 floats = 256 KiB.
//
// 1F1B lets each stage hold at most S micro-batches of at most 4 boundary
// tensors (input, its gradient, output, output's gradient), so the whole
// pipeline at most S x S x 4B whatever M, and the peak must not grow from
// M = 8 to M = 16 (a pipeline keeping a boundary tensor of every micro-batch
// on each stage would grow by 8 x S x B; the stages' threads drift against
// each other, so less than 8B is required). GPipe keeps every micro-batch
// until its backward, so its peak must grow by at least that 8 x S x B.
// pipeline_memory_test (parallel) measures each stage of a real pipeline.
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "chorus/torch/pipeline/pipeline.h"
#include "support/cpu_tensor_bytes.h"
#include "in_process_stage_link.h"
#include "support/cpu_tensor_bytes.h"

namespace chorus {
namespace torch {
namespace {

constexpr int kStages = 4;
constexpr int64_t kWidth = 256;
constexpr int64_t kRows = 256;  // per micro-batch
constexpr int64_t kBoundaryBytes = kRows * kWidth * static_cast<int64_t>(sizeof(float));

// The whole pipeline's peak bytes of tensors above the step's start, in the
// second step (the first makes the parameters' gradients, which later steps
// accumulate into in place).
int64_t pipeline_peak(PipelineSchedule schedule, int micro_batches) {
  auto& bytes = chorus_test::CpuTensorBytes::install();  // before the stages' threads
  ::torch::manual_seed(5);
  ::torch::nn::Sequential model;
  for (int s = 0; s < kStages; ++s) model->push_back(::torch::nn::Linear(kWidth, kWidth));
  auto mailbox = std::make_shared<InProcessMailbox>();
  std::vector<std::unique_ptr<Pipeline>> stages;
  for (int s = 0; s < kStages; ++s) {
    PipelineOptions options;
    options.micro_batches = micro_batches;
    options.schedule = schedule;
    stages.push_back(std::make_unique<Pipeline>(model, PipelineLayout::make(kStages, s, kStages),
                                                options,
                                                std::make_shared<InProcessStageLink>(mailbox, s)));
  }
  const auto input = ::torch::randn({micro_batches * kRows, kWidth});
  const auto target = ::torch::randn({micro_batches * kRows, kWidth});
  std::vector<std::string> errors(kStages);
  const auto step = [&] {
    std::vector<std::thread> threads;
    for (int s = 0; s < kStages; ++s) {
      threads.emplace_back([&, s] {
        try {
          stages[static_cast<size_t>(s)]->train_step(
              input, target,
              [](const ::torch::Tensor& out, const ::torch::Tensor& y) { return ::torch::mse_loss(out, y); });
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(s)] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
  };
  step();
  bytes.reset_peak();
  const int64_t before = bytes.live();
  step();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(mailbox->pending(), 0u);
  const int64_t peak = bytes.peak() - before;
  std::cout << pipeline_schedule_name(schedule) << " S=" << kStages << " M=" << micro_batches
            << ": the pipeline's peak " << peak << " bytes = "
            << static_cast<double>(peak) / kBoundaryBytes << " boundary tensors\n";
  return peak;
}

TEST(PipelineInProcessMemoryTest, OneFOneBHoldsAtMostSMicroBatchesPerStageWhateverTheirNumber) {
  const int64_t peak8 = pipeline_peak(PipelineSchedule::k1F1B, 8);
  const int64_t peak16 = pipeline_peak(PipelineSchedule::k1F1B, 16);
  const int64_t bound = kStages * kStages * 4 * kBoundaryBytes;
  EXPECT_LE(peak8, bound);
  EXPECT_LE(peak16, bound);
  EXPECT_LT(peak16 - peak8, 8 * kBoundaryBytes)
      << "the pipeline held " << peak8 << " bytes at M=8 and " << peak16 << " at M=16";
}

TEST(PipelineInProcessMemoryTest, GPipeHoldsEveryMicroBatch) {
  const int64_t peak8 = pipeline_peak(PipelineSchedule::kGPipe, 8);
  const int64_t peak16 = pipeline_peak(PipelineSchedule::kGPipe, 16);
  EXPECT_GE(peak16 - peak8, 8 * kStages * kBoundaryBytes)
      << "the pipeline held " << peak8 << " bytes at M=8 and " << peak16 << " at M=16";
}

}  // namespace
}  // namespace torch
}  // namespace chorus
