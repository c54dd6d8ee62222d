// Learning-rate helpers on their own: get/set on LibTorch's optimizers and
// the warm-up schedule with an explicit number of ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <torch/torch.h>

#include "chorus/status.h"
#include "chorus/torch/learning_rate.h"
#include "support/chorus_error_of.h"

namespace {

using chorus::torch::LearningRateWarmup;
using ::testing::HasSubstr;
namespace ct = chorus::torch;

using chorus_test::error_of;

double group_lr(const torch::optim::Optimizer& optimizer, size_t group) {
  return optimizer.param_groups()[group].options().get_lr();
}

TEST(LearningRateTest, SetAndGetOnEveryGroupOfEveryOptimizer) {
  std::vector<torch::Tensor> a = {torch::zeros({2}, torch::requires_grad())};
  std::vector<torch::Tensor> b = {torch::zeros({3}, torch::requires_grad())};
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers;
  optimizers.push_back(std::make_unique<torch::optim::SGD>(a, torch::optim::SGDOptions(0.1)));
  optimizers.push_back(std::make_unique<torch::optim::Adam>(a, torch::optim::AdamOptions(0.2)));
  optimizers.push_back(std::make_unique<torch::optim::AdamW>(a, torch::optim::AdamWOptions(0.3)));
  optimizers.push_back(std::make_unique<torch::optim::RMSprop>(a, torch::optim::RMSpropOptions(0.4)));
  optimizers.push_back(std::make_unique<torch::optim::Adagrad>(a, torch::optim::AdagradOptions(0.5)));
  for (auto& optimizer : optimizers) {
    // A second group with its own learning rate.
    auto options = optimizer->defaults().clone();
    options->set_lr(9.0);
    optimizer->add_param_group(torch::optim::OptimizerParamGroup(b, std::move(options)));
    const double before = group_lr(*optimizer, 0);
    EXPECT_DOUBLE_EQ(ct::get_learning_rate(*optimizer), before);
    ct::set_learning_rate(*optimizer, 0.0625);
    EXPECT_DOUBLE_EQ(group_lr(*optimizer, 0), 0.0625);
    EXPECT_DOUBLE_EQ(group_lr(*optimizer, 1), 0.0625);
    EXPECT_DOUBLE_EQ(ct::get_learning_rate(*optimizer), 0.0625);
  }
  EXPECT_THAT(error_of([&] { ct::set_learning_rate(*optimizers[0], -1); }),
              HasSubstr("learning rate -1.000000 is invalid; expected a finite value >= 0"));
  EXPECT_THAT(error_of([&] { ct::set_learning_rate(*optimizers[0], std::nan("")); }),
              HasSubstr("expected a finite value >= 0"));
  torch::optim::SGD empty(std::vector<torch::optim::OptimizerParamGroup>{}, torch::optim::SGDOptions(1));
  EXPECT_THAT(error_of([&] { ct::get_learning_rate(empty); }), HasSubstr("no parameter groups"));
}

// The schedule written out independently: linear interpolation between
// base_lr and base_lr x size over warmup_epochs x steps_per_epoch batches.
double expected_lr(double base, int size, double warmup_epochs, int64_t steps_per_epoch,
                   int64_t position) {
  const double warmup_batches = warmup_epochs * static_cast<double>(steps_per_epoch);
  const double target = base * size;
  if (static_cast<double>(position) >= warmup_batches) return target;
  return base + (target - base) * static_cast<double>(position) / warmup_batches;
}

TEST(LearningRateWarmupTest, LinearFromBaseToScaledThenConstant) {
  std::vector<torch::Tensor> params = {torch::zeros({2}, torch::requires_grad())};
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(123.0));
  const double base = 0.1;
  LearningRateWarmup warmup(sgd, base, /*warmup_epochs=*/2, /*steps_per_epoch=*/10, /*size=*/4);
  EXPECT_DOUBLE_EQ(ct::get_learning_rate(sgd), 123.0) << "the constructor must not touch the optimizer";
  for (int64_t batch = 0; batch < 35; ++batch) {
    EXPECT_EQ(warmup.position(), batch);
    EXPECT_NEAR(warmup.learning_rate(), expected_lr(base, 4, 2, 10, batch), 1e-12);
    warmup.step();
    EXPECT_NEAR(ct::get_learning_rate(sgd), expected_lr(base, 4, 2, 10, batch), 1e-12) << batch;
  }
  // Landmarks: the first batch trains at base_lr, mid-warm-up halfway, and
  // from epoch 2 on at base_lr x size.
  EXPECT_DOUBLE_EQ(warmup.learning_rate_at(0), base);
  EXPECT_NEAR(warmup.learning_rate_at(10), (base + 4 * base) / 2, 1e-12);
  EXPECT_NEAR(warmup.learning_rate_at(20), 0.4, 1e-12);
  EXPECT_NEAR(warmup.learning_rate_at(1000), 0.4, 1e-12);
}

TEST(LearningRateWarmupTest, FractionalZeroAndResumedWarmups) {
  std::vector<torch::Tensor> params = {torch::zeros({2}, torch::requires_grad())};
  torch::optim::Adam adam(params, torch::optim::AdamOptions(1.0));
  LearningRateWarmup half(adam, 0.01, 0.5, 8, 3);
  for (int64_t p = 0; p < 10; ++p) EXPECT_NEAR(half.learning_rate_at(p), expected_lr(0.01, 3, 0.5, 8, p), 1e-12);
  LearningRateWarmup none(adam, 0.01, 0, 8, 3);
  none.step();
  EXPECT_NEAR(ct::get_learning_rate(adam), 0.03, 1e-12);
  // Resuming at epoch 1, batch 2 of 8: the next step is batch 10 overall.
  LearningRateWarmup resumed(adam, 0.01, 2, 8, 3);
  resumed.set_position(1, 2);
  EXPECT_EQ(resumed.position(), 10);
  resumed.step();
  EXPECT_NEAR(ct::get_learning_rate(adam), expected_lr(0.01, 3, 2, 8, 10), 1e-12);
  // One rank: warm-up is flat.
  LearningRateWarmup single(adam, 0.5, 3, 4, 1);
  for (int64_t p = 0; p < 20; ++p) EXPECT_DOUBLE_EQ(single.learning_rate_at(p), 0.5);
}

TEST(LearningRateWarmupTest, BadArgumentsAreNamed) {
  std::vector<torch::Tensor> params = {torch::zeros({2}, torch::requires_grad())};
  torch::optim::SGD sgd(params, torch::optim::SGDOptions(1.0));
  EXPECT_THAT(error_of([&] { LearningRateWarmup(sgd, 0.1, 1, 0, 2); }),
              HasSubstr("steps_per_epoch 0 is invalid; expected a value > 0"));
  EXPECT_THAT(error_of([&] { LearningRateWarmup(sgd, 0.1, -1, 5, 2); }),
              HasSubstr("warmup_epochs -1.000000 is invalid"));
  EXPECT_THAT(error_of([&] { LearningRateWarmup(sgd, std::numeric_limits<double>::infinity(), 1, 5, 2); }),
              HasSubstr("base_lr inf is invalid"));
  EXPECT_THAT(error_of([&] { LearningRateWarmup(sgd, 0.1, 1, 5, 0); }), HasSubstr("size 0 is invalid"));
  LearningRateWarmup warmup(sgd, 0.1, 1, 5, 2);
  EXPECT_THAT(error_of([&] { warmup.set_position(0, 5); }),
              HasSubstr("epoch 0, batch 5 is invalid; expected epoch >= 0 and batch in [0, 5)"));
  EXPECT_THAT(error_of([&] { warmup.set_position(-1, 0); }), HasSubstr("epoch -1, batch 0 is invalid"));
}

}  // namespace
