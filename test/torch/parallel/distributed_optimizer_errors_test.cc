// DistributedOptimizer misuse and failures: refused optimizers, names and
// options (local checks), zero_grad() or step() with allreduces in flight,
// more backward passes than configured, an error from the runtime (ranks
// disagreeing about a gradient's shape), and hooks that go away with the
// optimizer. Every rank runs the same calls, so collectives always pair up.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"
#include "distributed_optimizer_test_support.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::StatusCode;
using chorus::torch::DistributedOptimizer;
using chorus::torch::DistributedOptimizerOptions;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kErrorsRows = 8;

class DistributedOptimizerErrorsTest : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ::torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }

  static DistributedOptimizerOptions with_prefix(const std::string& prefix) {
    DistributedOptimizerOptions options;
    options.name_prefix = prefix;
    return options;
  }

  // One backward pass of `model` on this rank's shard of step 0's batch.
  void backward(Net& model) {
    const Batch mine = shard(global_batch(0, kErrorsRows * size()), rank(), kErrorsRows);
    ::torch::mse_loss(model->forward(mine.x), mine.y).backward();
  }
};

TEST_F(DistributedOptimizerErrorsTest, LbfgsIsRefused) {
  Net model = make_net(1);
  ::torch::optim::LBFGS lbfgs(model->parameters());
  const chorus::Status status =
      thrown_by([&] { DistributedOptimizer optimizer(lbfgs, model->named_parameters()); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), StartsWith("DistributedOptimizer: LBFGS is not supported"));
  EXPECT_THAT(status.message(), HasSubstr("expected an optimizer that steps once per gradient"));
}

TEST_F(DistributedOptimizerErrorsTest, DuplicateNamesAreRefused) {
  Net model = make_net(2);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  std::vector<std::pair<std::string, ::torch::Tensor>> named;
  for (const auto& item : model->named_parameters()) named.emplace_back(item.key(), item.value());
  named[2].first = named[0].first;
  const chorus::Status status = thrown_by([&] { DistributedOptimizer optimizer(sgd, named); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "DistributedOptimizer: duplicate parameter name 'first.weight' (positions 0 and 2); "
            "expected every name once, so that collective names are unique");
}

TEST_F(DistributedOptimizerErrorsTest, ParameterMissingFromNamedListIsRefused) {
  Net model = make_net(3);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  std::vector<std::pair<std::string, ::torch::Tensor>> named;
  for (const auto& item : model->named_parameters()) {
    if (item.key() != "last.weight") named.emplace_back(item.key(), item.value());
  }
  const chorus::Status status = thrown_by([&] { DistributedOptimizer optimizer(sgd, named); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "DistributedOptimizer: the optimizer updates a parameter (group 0, index 2, shape "
            "[4, 16]) that is not among the named parameters; expected every parameter the "
            "optimizer updates to be named");
}

TEST_F(DistributedOptimizerErrorsTest, BadOptionsAreRefused) {
  Net model = make_net(4);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  auto refused = [&](DistributedOptimizerOptions options) {
    return thrown_by([&] { DistributedOptimizer optimizer(sgd, model->named_parameters(), options); })
        .message();
  };
  DistributedOptimizerOptions max_op;
  max_op.op = chorus::ReduceOp::kMax;
  EXPECT_EQ(refused(max_op),
            "DistributedOptimizer: reduce op max is not supported; expected average, sum or adasum");
  DistributedOptimizerOptions no_passes;
  no_passes.backward_passes_per_step = 0;
  EXPECT_EQ(refused(no_passes),
            "DistributedOptimizer: backward_passes_per_step=0 is invalid; expected an integer >= 1");
  DistributedOptimizerOptions zero_factor;
  zero_factor.gradient_predivide_factor = 0.0;
  EXPECT_THAT(refused(zero_factor), HasSubstr("expected a finite number > 0"));
  DistributedOptimizerOptions factor_with_sum;
  factor_with_sum.op = chorus::ReduceOp::kSum;
  factor_with_sum.gradient_predivide_factor = 2.0;
  EXPECT_THAT(refused(factor_with_sum), HasSubstr("needs the average op"));
  DistributedOptimizerOptions no_prefix;
  no_prefix.name_prefix = "";
  EXPECT_THAT(refused(no_prefix), HasSubstr("name_prefix is empty"));

  EXPECT_EQ(chorus::torch::parse_compression("bf16"), chorus::torch::Compression::kBF16);
  EXPECT_EQ(thrown_by([] { chorus::torch::parse_compression("fp8"); }).message(),
            "compression 'fp8' is invalid: expected one of none, fp16, bf16");
}

TEST_F(DistributedOptimizerErrorsTest, ZeroGradWhileAllreducesAreInFlightIsRefused) {
  Net model = make_net(5);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  DistributedOptimizer optimizer(sgd, model->named_parameters(), with_prefix("zero_grad"));
  backward(model);
  ASSERT_EQ(optimizer.allreduces_submitted(), 4) << "the hooks must have submitted every gradient";
  const chorus::Status status = thrown_by([&] { optimizer.zero_grad(); });
  EXPECT_EQ(status.code(), StatusCode::kPreconditionFailed);
  EXPECT_EQ(status.message(),
            "DistributedOptimizer: zero_grad() called while 4 gradient allreduce(s) are in flight "
            "(e.g. 'zero_grad.last.bias'); expected synchronize() or step() first");
  ASSERT_NO_THROW(optimizer.synchronize());
  // The refused zero_grad() left the (now reduced) gradients alone.
  EXPECT_GT(model->last->bias.grad().abs().sum().item<double>(), 0.0);
  ASSERT_NO_THROW(optimizer.zero_grad());
  EXPECT_EQ(model->last->bias.grad().abs().sum().item<double>(), 0.0);
}

TEST_F(DistributedOptimizerErrorsTest, StepInsideSkipScopeWithAllreducesInFlightIsRefused) {
  Net model = make_net(6);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  DistributedOptimizer optimizer(sgd, model->named_parameters(), with_prefix("skip"));
  const auto before = model->last->bias.clone();
  backward(model);
  {
    auto skip = optimizer.skip_synchronize();
    const chorus::Status status = thrown_by([&] { optimizer.step(); });
    EXPECT_EQ(status.code(), StatusCode::kPreconditionFailed);
    EXPECT_THAT(status.message(),
                StartsWith("DistributedOptimizer: step() inside skip_synchronize() called while 4 "
                           "gradient allreduce(s) are in flight"));
  }
  EXPECT_TRUE(model->last->bias.equal(before)) << "a refused step() must not update";
  ASSERT_NO_THROW(optimizer.step());
  EXPECT_FALSE(model->last->bias.equal(before));
}

TEST_F(DistributedOptimizerErrorsTest, MoreBackwardPassesThanConfiguredIsAnError) {
  Net model = make_net(7);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  DistributedOptimizer optimizer(sgd, model->named_parameters(), with_prefix("passes"));
  backward(model);
  backward(model);
  const chorus::Status status = thrown_by([&] { optimizer.synchronize(); });
  EXPECT_EQ(status.code(), StatusCode::kPreconditionFailed);
  EXPECT_THAT(status.message(),
              StartsWith("DistributedOptimizer: the gradient of 'passes.last.bias' was computed "
                         "again while its allreduce was in flight: more than "
                         "backward_passes_per_step=1 backward passes"));
  // The failed step is over: the next one works.
  optimizer.zero_grad();
  backward(model);
  EXPECT_NO_THROW(optimizer.step());
  EXPECT_EQ(optimizer.allreduces_submitted(), 8);
}

// Ranks disagree about a parameter's shape: the runtime fails the gradient's
// allreduce on every rank, and synchronize() throws its message.
TEST_F(DistributedOptimizerErrorsTest, RuntimeErrorSurfacesWithTheRuntimesMessage) {
  ::torch::Tensor weight = ::torch::ones({rank() + 2}, ::torch::requires_grad());
  ::torch::optim::SGD sgd(std::vector<::torch::Tensor>{weight}, ::torch::optim::SGDOptions(0.1));
  DistributedOptimizer optimizer(sgd, {{"w", weight}}, with_prefix("mismatch"));
  (weight * weight).sum().backward();
  const chorus::Status status = thrown_by([&] { optimizer.step(); });
  EXPECT_EQ(status.code(), StatusCode::kMismatch);
  EXPECT_EQ(status.message(),
            "Mismatched shape for allreduce 'mismatch.w': rank 0 has [2], rank 1 has [3]");
  EXPECT_TRUE(weight.equal(::torch::ones({rank() + 2}))) << "a failed step() must not update";
}

// An optimizer destroyed with allreduces in flight waits for them, and its
// hooks go with it: a second optimizer on the same model then sees every
// gradient once (a leftover hook would submit the same names twice, or call
// into freed memory).
TEST_F(DistributedOptimizerErrorsTest, DestructionWaitsForAllreducesAndRemovesHooks) {
  Net model = make_net(8);
  ::torch::optim::SGD sgd(model->parameters(), ::torch::optim::SGDOptions(0.1));
  {
    DistributedOptimizer first(sgd, model->named_parameters(), with_prefix("lifetime"));
    backward(model);
    EXPECT_EQ(first.allreduces_submitted(), 4);
  }
  DistributedOptimizer second(sgd, model->named_parameters(), with_prefix("lifetime"));
  second.zero_grad();
  backward(model);
  EXPECT_NO_THROW(second.step());
  EXPECT_EQ(second.allreduces_submitted(), 4);
}

}  // namespace
}  // namespace chorus_test
