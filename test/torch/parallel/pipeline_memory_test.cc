// A stage's memory under GPipe and 1F1B on real mpirun ranks (np = S, one
// stage per rank, messages over Chorus's send/recv): the bytes of CPU tensor
// storage the stage holds at once during a step, counted exactly by
// test/support/cpu_tensor_bytes.h, above what it held when the step began
// (its parameters and their gradients, the batch). The model is S layers
// Linear(256, 256), one per stage, so every boundary tensor (an activation
// or its gradient) has B = 256 rows x 256 floats = 256 KiB and a stage's
// own parameters are about B too.
//
// 1F1B lets stage s hold at most S - s micro-batches between their forward
// and their backward; each holds at most 4 boundary tensors there (the input
// received, its gradient, the output, the output's gradient). So a stage's
// peak must stay within S x 4B whatever M. And it must not grow with M: a
// stage that kept anything of every micro-batch until the step's end would
// hold at least 8B more at M = 16 than at M = 8; the figures may differ by
// the sends still in transit at the peak (when a neighbour took a message
// depends on timing, a boundary tensor or two), so less than 4B is required.
// GPipe runs every forward before any backward, so its peak must grow by at
// least one boundary tensor per extra micro-batch: the check that the
// counter sees what a stage holds.
#include <iostream>
#include <string>

#include "chorus/torch/pipeline/pipeline.h"
#include "support/cpu_tensor_bytes.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

namespace ct = chorus::torch;

constexpr int64_t kWidth = 256;
constexpr int64_t kRows = 256;  // per micro-batch
constexpr int64_t kBoundaryBytes = kRows * kWidth * static_cast<int64_t>(sizeof(float));
constexpr int64_t kMicroBatchBytes = 4 * kBoundaryBytes;

class PipelineMemoryTest : public TorchSuite {
 protected:
  static void SetUpTestSuite() {
    chorus_test::CpuTensorBytes::install();
    TorchSuite::SetUpTestSuite();
  }

  // This stage's peak bytes of tensors above the step's start, in the second
  // step of a fresh pipeline (the first makes the parameters' gradients,
  // which later steps accumulate into in place).
  int64_t stage_peak(ct::PipelineSchedule schedule, int micro_batches) {
    const int S = size();
    const auto layout = ct::PipelineLayout::make(S, rank(), S);
    torch::manual_seed(5);
    torch::nn::Sequential model;
    for (int s = 0; s < S; ++s) model->push_back(torch::nn::Linear(kWidth, kWidth));
    ct::PipelineOptions options;
    options.micro_batches = micro_batches;
    options.schedule = schedule;
    options.name = "mem." + std::string(ct::pipeline_schedule_name(schedule)) + "." +
                   std::to_string(micro_batches);
    ct::Pipeline pipeline(model, layout, options, ct::make_chorus_stage_link());
    const auto input = torch::randn({micro_batches * kRows, kWidth});
    const auto target = torch::randn({micro_batches * kRows, kWidth});
    const auto mse = [](const torch::Tensor& out, const torch::Tensor& y) {
      return torch::mse_loss(out, y);
    };
    pipeline.train_step(input, target, mse);
    auto& bytes = chorus_test::CpuTensorBytes::install();
    chorus::barrier();
    bytes.reset_peak();
    const int64_t before = bytes.live();
    pipeline.train_step(input, target, mse);
    const int64_t peak = bytes.peak() - before;
    chorus::barrier();
    std::cout << ct::pipeline_schedule_name(schedule) << " S=" << S << " M=" << micro_batches
              << " stage " << layout.stage << ": peak " << peak << " bytes = "
              << static_cast<double>(peak) / kBoundaryBytes << " boundary tensors\n";
    return peak;
  }
};

TEST_F(PipelineMemoryTest, OneFOneBHoldsAtMostSMicroBatchesWhateverTheirNumber) {
  const int64_t peak8 = stage_peak(ct::PipelineSchedule::k1F1B, 8);
  const int64_t peak16 = stage_peak(ct::PipelineSchedule::k1F1B, 16);
  EXPECT_LE(peak8, size() * kMicroBatchBytes) << "M=8, stage " << rank();
  EXPECT_LE(peak16, size() * kMicroBatchBytes) << "M=16, stage " << rank();
  EXPECT_LT(peak16 - peak8, 4 * kBoundaryBytes)
      << "stage " << rank() << " held " << peak8 << " bytes at M=8 and " << peak16 << " at M=16";
}

TEST_F(PipelineMemoryTest, GPipeHoldsEveryMicroBatch) {
  const int64_t peak8 = stage_peak(ct::PipelineSchedule::kGPipe, 8);
  const int64_t peak16 = stage_peak(ct::PipelineSchedule::kGPipe, 16);
  EXPECT_GE(peak16 - peak8, 8 * kBoundaryBytes)
      << "stage " << rank() << " held " << peak8 << " bytes at M=8 and " << peak16 << " at M=16";
}

}  // namespace
}  // namespace chorus_torch_test
