// The parts of mixed precision that need no other rank: GradScaler's options,
// scale(), disabled mode and state round trip; CPU autocast (bfloat16 casts,
// restored state) and the float16 probe. The scaler's decisions, unscaling
// and agreement across ranks are in test/torch/parallel/grad_scaler_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "chorus/status.h"
#include "chorus/torch/autocast.h"
#include "chorus/torch/grad_scaler.h"
#include "support/chorus_error_of.h"

namespace {

using ::testing::HasSubstr;
namespace ct = chorus::torch;

using chorus_test::error_of;

TEST(GradScalerOptions, DefaultsAreTorchAmps) {
  const ct::GradScaler scaler;
  const ct::GradScalerState s = scaler.state();
  EXPECT_EQ(s.scale, 65536.0);
  EXPECT_EQ(s.growth_factor, 2.0);
  EXPECT_EQ(s.backoff_factor, 0.5);
  EXPECT_EQ(s.growth_interval, 2000);
  EXPECT_EQ(s.growth_tracker, 0);
  EXPECT_EQ(scaler.get_scale(), 65536.0);
}

TEST(GradScalerOptions, BadOptionsAreNamed) {
  const auto with = [](const std::function<void(ct::GradScalerOptions&)>& change) {
    ct::GradScalerOptions options;
    change(options);
    return error_of([&] { ct::GradScaler scaler(options); });
  };
  EXPECT_THAT(with([](auto& o) { o.init_scale = 0; }), HasSubstr("scale=0"));
  EXPECT_THAT(with([](auto& o) { o.init_scale = std::numeric_limits<double>::infinity(); }),
              HasSubstr("expected a finite number > 0"));
  EXPECT_THAT(with([](auto& o) { o.growth_factor = 1.0; }), HasSubstr("growth_factor"));
  EXPECT_THAT(with([](auto& o) { o.backoff_factor = 1.0; }), HasSubstr("backoff_factor"));
  EXPECT_THAT(with([](auto& o) { o.backoff_factor = 0.0; }), HasSubstr("backoff_factor"));
  EXPECT_THAT(with([](auto& o) { o.growth_interval = 0; }), HasSubstr("growth_interval=0"));
  EXPECT_THAT(with([](auto& o) { o.name = ""; }), HasSubstr("name is empty"));
}

TEST(GradScaler, ScaleMultipliesTheLoss) {
  ct::GradScalerOptions options;
  options.init_scale = 1024;
  const ct::GradScaler scaler(options);
  const torch::Tensor loss = torch::tensor(0.75f);
  EXPECT_EQ(scaler.scale(loss).item<float>(), 768.0f);
  EXPECT_THAT(error_of([&] { scaler.scale(torch::tensor(3)); }), HasSubstr("floating-point"));
}

TEST(GradScaler, DisabledPassesThroughAndAlwaysSteps) {
  ct::GradScalerOptions options;
  options.enabled = false;
  ct::GradScaler scaler(options);
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  torch::optim::SGD sgd({w}, torch::optim::SGDOptions(1.0));
  w.mutable_grad() = torch::tensor({1.0f, 2.0f});
  EXPECT_EQ(scaler.scale(torch::tensor(2.0f)).item<float>(), 2.0f);
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_TRUE(scaler.step(sgd));  // no flag allreduce, so no chorus::init needed
  scaler.update();
  EXPECT_TRUE(torch::equal(w.detach(), torch::tensor({-1.0f, -2.0f})));
}

TEST(GradScalerState, RoundTripsThroughAnArchive) {
  ct::GradScaler scaler;
  ct::GradScalerState state;
  state.scale = 512;
  state.growth_tracker = 7;
  state.growth_factor = 4;
  state.backoff_factor = 0.25;
  state.growth_interval = 9;
  scaler.load_state(state);
  torch::serialize::OutputArchive out;
  scaler.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);

  ct::GradScaler restored;
  torch::serialize::InputArchive in;
  std::istringstream input(bytes.str());
  in.load_from(input);
  restored.load(in);
  const ct::GradScalerState r = restored.state();
  EXPECT_EQ(r.scale, 512);
  EXPECT_EQ(r.growth_tracker, 7);
  EXPECT_EQ(r.growth_factor, 4);
  EXPECT_EQ(r.backoff_factor, 0.25);
  EXPECT_EQ(r.growth_interval, 9);

  state.growth_tracker = 9;  // must be below the interval
  EXPECT_THAT(error_of([&] { scaler.load_state(state); }), HasSubstr("growth_tracker=9"));
  torch::serialize::InputArchive empty;
  EXPECT_THAT(error_of([&] { restored.load(empty); }), HasSubstr("no scalar 'scale'"));
}

TEST(AmpMode, ParsesItsNames) {
  EXPECT_EQ(ct::parse_amp_mode("off"), ct::AmpMode::kOff);
  EXPECT_EQ(ct::parse_amp_mode("bf16"), ct::AmpMode::kBF16);
  EXPECT_EQ(ct::parse_amp_mode("fp16"), ct::AmpMode::kFP16);
  EXPECT_THAT(error_of([] { ct::parse_amp_mode("fp8"); }), HasSubstr("'fp8' is invalid"));
}

TEST(CpuAutocast, Bf16RunsLinearInBfloat16AndRestores) {
  torch::nn::Linear linear(4, 3);
  const torch::Tensor x = torch::randn({2, 4});
  {
    ct::CpuAutocast autocast(ct::AmpMode::kBF16);
    EXPECT_TRUE(ct::cpu_autocast_active());
    const torch::Tensor y = linear->forward(x);
    EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
    // Losses stay float32 (autocast's fp32 list).
    const torch::Tensor loss = torch::nn::functional::cross_entropy(y, torch::tensor({0, 2}));
    EXPECT_EQ(loss.scalar_type(), torch::kFloat32);
    loss.backward();
  }
  EXPECT_FALSE(ct::cpu_autocast_active());
  // Parameters and their gradients stay float32.
  EXPECT_EQ(linear->weight.grad().scalar_type(), torch::kFloat32);
  EXPECT_EQ(linear->forward(x).scalar_type(), torch::kFloat32);
  ct::CpuAutocast off(ct::AmpMode::kOff);
  EXPECT_FALSE(ct::cpu_autocast_active());
}

TEST(CpuAutocast, Fp16IsRefusedWhereCpuKernelsLackHalfMatmul) {
  bool half_matmul = true;
  try {
    const auto half = torch::ones({1, 1}, torch::kHalf);
    (void)torch::addmm(half, half, half);
  } catch (const std::exception&) {
    half_matmul = false;
  }
  const std::string error = error_of([] { ct::check_amp_supported(ct::AmpMode::kFP16); });
  if (half_matmul) {
    EXPECT_EQ(error, chorus_test::kNoError);
  } else {
    EXPECT_THAT(error, HasSubstr("amp fp16 is not supported on the CPU"));
    EXPECT_THAT(error, HasSubstr("expected --amp bf16"));
  }
  EXPECT_EQ(error_of([] { ct::check_amp_supported(ct::AmpMode::kBF16); }), chorus_test::kNoError);
}

}  // namespace
