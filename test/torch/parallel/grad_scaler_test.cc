// GradScaler across ranks: one rank alone overflowing makes every rank skip
// the step (parameters unchanged everywhere) and halve the scale, with a
// DistributedOptimizer (the inf travels in the averaged gradients) and with
// plain optimizers (one allreduce of the flag); a scripted sequence of
// overflow/finite steps against hand-computed scales and parameters;
// growth after growth_interval finite steps; a gradient that overflows
// float16 compression on the wire; unscaling against the plain
// average computed here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/grad_scaler.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::torch::DistributedOptimizer;
using chorus::torch::GradScaler;
using chorus::torch::GradScalerOptions;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();

class GradScalerTest : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ::torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }
};

// Rank r's input: (r + 1) x [1, 2, 3] / 4, exact in float, as are their
// means over up to 4 ranks times any power of two.
::torch::Tensor input_of(int rank) {
  return ::torch::tensor({1.0f, 2.0f, 3.0f}) * static_cast<float>(rank + 1) / 4.0f;
}

::torch::Tensor mean_input(int size) {
  ::torch::Tensor sum = ::torch::zeros({3});
  for (int r = 0; r < size; ++r) sum += input_of(r);
  return sum / static_cast<float>(size);
}

// loss = sum(w * x): the gradient of w is x (times the scale), or inf in
// its first element where `overflow`.
::torch::Tensor scaled_loss_of(const ::torch::Tensor& w, int rank, bool overflow) {
  ::torch::Tensor x = input_of(rank);
  if (overflow) x[0] = kInf;
  return (w * x).sum();
}

TEST_F(GradScalerTest, OneRankOverflowingMakesEveryRankSkipAndHalve) {
  ::torch::Tensor w = ::torch::ones({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(1.0));
  chorus::torch::DistributedOptimizerOptions options;
  options.name_prefix = "scaler_skip";
  DistributedOptimizer optimizer(sgd, {{"w", w}}, options);
  GradScaler scaler;

  // The last rank alone sees inf.
  optimizer.zero_grad();
  scaler.scale(scaled_loss_of(w, rank(), rank() == size() - 1)).backward();
  EXPECT_FALSE(scaler.step(optimizer)) << "rank " << rank();
  scaler.update();
  EXPECT_TRUE(::torch::equal(w.detach(), ::torch::ones({3}))) << "rank " << rank() << ": " << w;
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);

  // The next, finite step goes through with the averaged, unscaled gradient.
  optimizer.zero_grad();
  scaler.scale(scaled_loss_of(w, rank(), false)).backward();
  EXPECT_TRUE(scaler.step(optimizer));
  scaler.update();
  EXPECT_TRUE(::torch::equal(w.detach(), ::torch::ones({3}) - mean_input(size()))) << w;
  EXPECT_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST_F(GradScalerTest, PlainOptimizersAgreeByAllreducingTheFlag) {
  // Each rank steps its own parameters on its own gradients: only the flag
  // is shared.
  ::torch::Tensor w = ::torch::ones({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(1.0));
  GradScalerOptions options;
  options.init_scale = 8;
  GradScaler scaler(options);
  for (int overflowing = 0; overflowing < size(); ++overflowing) {
    sgd.zero_grad();
    scaler.scale(scaled_loss_of(w, rank(), rank() == overflowing)).backward();
    EXPECT_FALSE(scaler.step(sgd)) << "rank " << rank() << ", overflow on rank " << overflowing;
    scaler.update();
    EXPECT_TRUE(::torch::equal(w.detach(), ::torch::ones({3}))) << "rank " << rank() << ": " << w;
  }
  EXPECT_EQ(scaler.get_scale(), 8.0 / (1 << size()));
  sgd.zero_grad();
  scaler.scale(scaled_loss_of(w, rank(), false)).backward();
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_TRUE(::torch::equal(w.detach(), ::torch::ones({3}) - input_of(rank()))) << w;
}

TEST_F(GradScalerTest, ScriptedSequenceMatchesHandComputedScales) {
  // growth_interval 3, init 8: the scale after each update, worked out by
  // hand from torch.cuda.amp.GradScaler's rule (x0.5 on inf and the count
  // restarts; x2 after 3 finite steps in a row).
  const std::vector<bool> overflow = {false, false, true,  false, false, false,
                                      false, true,  true,  false, false, false};
  const std::vector<double> expected_scale = {8, 8, 4, 4, 4, 8, 8, 4, 2, 2, 2, 4};
  ::torch::Tensor w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(0.5));
  chorus::torch::DistributedOptimizerOptions distributed;
  distributed.name_prefix = "scaler_script";
  DistributedOptimizer optimizer(sgd, {{"w", w}}, distributed);
  GradScalerOptions options;
  options.init_scale = 8;
  options.growth_interval = 3;
  GradScaler scaler(options);
  ::torch::Tensor reference = ::torch::zeros({3});
  int64_t skipped = 0;
  for (size_t step = 0; step < overflow.size(); ++step) {
    // A different rank overflows each time.
    const bool mine = overflow[step] && static_cast<int>(step) % size() == rank();
    optimizer.zero_grad();
    scaler.scale(scaled_loss_of(w, rank(), mine)).backward();
    EXPECT_EQ(scaler.step(optimizer), !overflow[step]) << "step " << step;
    scaler.update();
    if (overflow[step]) {
      ++skipped;
    } else {
      reference -= 0.5f * mean_input(size());
    }
    EXPECT_EQ(scaler.get_scale(), expected_scale[step]) << "step " << step;
    EXPECT_TRUE(::torch::allclose(w.detach(), reference, 1e-6, 1e-6))
        << "step " << step << ": " << w << " vs " << reference;
  }
  EXPECT_EQ(scaler.skipped_steps(), skipped);
}

TEST_F(GradScalerTest, Fp16CompressionOverflowIsCaughtAndTheScaleBacksOffUntilItFits) {
  // Rank 0's gradient is 2 x scale and travels as float16 (largest finite
  // 65504): at scales 65536 and 32768 it overflows on the wire, which every
  // rank sees in the sum; at 16384 it fits (the other ranks add zeros).
  ::torch::Tensor w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(1.0));
  chorus::torch::DistributedOptimizerOptions distributed;
  distributed.name_prefix = "scaler_fp16";
  distributed.compression = chorus::torch::Compression::kFP16;
  DistributedOptimizer optimizer(sgd, {{"w", w}}, distributed);
  GradScaler scaler;
  const float slope = rank() == 0 ? 2.0f : 0.0f;
  const std::vector<bool> expected_step = {false, false, true};
  const std::vector<double> expected_scale = {32768, 16384, 16384};
  for (size_t i = 0; i < expected_step.size(); ++i) {
    optimizer.zero_grad();
    scaler.scale((w * slope).sum()).backward();
    EXPECT_EQ(scaler.step(optimizer), expected_step[i]) << "step " << i;
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), expected_scale[i]) << "step " << i;
  }
  // One step of the average 2 / size, rounded to float16 once on the way
  // (the other operations scale by powers of two, exactly): within float16's
  // unit roundoff 2^-11 (4.9e-4) of it, relative, on any machine.
  const ::torch::Tensor expected = ::torch::full({3}, -2.0f / static_cast<float>(size()));
  EXPECT_TRUE(::torch::allclose(w.detach(), expected, std::ldexp(1.0, -11), 0)) << w;
}

TEST_F(GradScalerTest, GrowsAfterGrowthIntervalFiniteSteps) {
  ::torch::Tensor w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(0.0));
  chorus::torch::DistributedOptimizerOptions distributed;
  distributed.name_prefix = "scaler_growth";
  DistributedOptimizer optimizer(sgd, {{"w", w}}, distributed);
  GradScalerOptions options;
  options.growth_interval = 20;
  options.growth_factor = 4;
  GradScaler scaler(options);
  for (int step = 1; step <= 45; ++step) {
    optimizer.zero_grad();
    scaler.scale(scaled_loss_of(w, rank(), false)).backward();
    ASSERT_TRUE(scaler.step(optimizer));
    scaler.update();
    const double expected = 65536.0 * (step >= 40 ? 16 : step >= 20 ? 4 : 1);
    ASSERT_EQ(scaler.get_scale(), expected) << "after step " << step;
    ASSERT_EQ(scaler.growth_tracker(), step % 20);
  }
}

TEST_F(GradScalerTest, UnscaleGivesTheAveragedGradientOnceAndStepAddsNoAllreduce) {
  ::torch::Tensor w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(1.0));
  chorus::torch::DistributedOptimizerOptions distributed;
  distributed.name_prefix = "scaler_unscale";
  DistributedOptimizer optimizer(sgd, {{"w", w}}, distributed);
  GradScalerOptions options;
  options.init_scale = 3;  // not a power of two: unscaling rounds
  GradScaler scaler(options);
  optimizer.zero_grad();
  scaler.scale(scaled_loss_of(w, rank(), false)).backward();
  scaler.unscale_(optimizer);
  EXPECT_TRUE(::torch::allclose(w.grad(), mean_input(size()), 1e-6, 0)) << w.grad();
  EXPECT_THAT(
      [&] {
        try {
          scaler.unscale_(optimizer);
        } catch (const chorus::Error& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("already called"));
  // Clipping would go here; step() must not unscale or allreduce again.
  const int64_t submitted = optimizer.allreduces_submitted();
  EXPECT_TRUE(scaler.step(optimizer));
  EXPECT_EQ(optimizer.allreduces_submitted(), submitted);
  EXPECT_TRUE(::torch::allclose(w.detach(), -mean_input(size()), 1e-6, 0)) << w;
  EXPECT_THROW(scaler.step(optimizer), chorus::Error);
  scaler.update();
}

}  // namespace
}  // namespace chorus_test
