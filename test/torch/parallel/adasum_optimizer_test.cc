// DistributedOptimizer with op = kAdasum (Horovod's Adasum optimizer): each
// rank steps Adam on its own gradients, the parameters' changes are combined
// by Adasum and applied on every rank; the gradients themselves stay local.
// Checked over two steps (the second from the combined parameters, with each
// rank's own Adam moments) against a reference computed here: each rank's
// change by a plain LibTorch Adam on a copy, fed that rank's gradients, and
// their Adasum by the paper's formula in double (support/adasum_reference.h).
// Adam, because its update is not linear in the gradient: the Adasum of the
// gradients followed by one Adam step would be something else.
// With a GradScaler the ranks agree on skipping a step that one of them saw
// an inf in (the gradients being local). np 2: the job; np 3: a set of ranks
// 1 and 2, and the job refused (its size is not a power of two).
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"
#include "chorus/torch/grad_scaler.h"
#include "support/adasum_reference.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::ProcessSet;
using chorus::torch::DistributedOptimizer;
using chorus::torch::DistributedOptimizerOptions;

constexpr double kLr = 0.05;
const std::vector<int64_t> kShapes[] = {{4, 3}, {5}};

// d/dp of sum(p * coefficients) is the coefficients: the gradient of
// parameter `param` on set rank `r` at step `step`.
::torch::Tensor gradient(int param, int r, int step) {
  const int64_t n = param == 0 ? 12 : 5;
  ::torch::Tensor k = ::torch::arange(n, ::torch::kFloat64);
  return ((k * (r + 2) * 0.37 + step * 1.3 + param).sin() * (1.0 + r)).to(::torch::kFloat32).reshape(kShapes[param]);
}

::torch::Tensor initial(int param) {
  const int64_t n = param == 0 ? 12 : 5;
  return (::torch::arange(n, ::torch::kFloat32) * 0.1 - 0.3).reshape(kShapes[param]);
}

std::vector<double> as_doubles(const ::torch::Tensor& t) {
  ::torch::Tensor d = t.to(::torch::kFloat64).contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

class AdasumOptimizer : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ::torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }
};

TEST_F(AdasumOptimizer, StepAppliesTheAdasumOfTheRanksAdamUpdates) {
  // np 2: the job; np 3: ranks 1 and 2.
  const bool job = size() == 2;
  std::vector<int> members = {size() - 2, size() - 1};
  const ProcessSet set = job ? ProcessSet::global() : chorus::add_process_set(members);
  const auto where = std::find(members.begin(), members.end(), rank());
  // A lambda, so that a failed assertion still reaches the barrier below.
  if (where != members.end()) [&] {
    const int me = static_cast<int>(where - members.begin());
    std::vector<::torch::Tensor> params = {initial(0).requires_grad_(), initial(1).requires_grad_()};
    ::torch::optim::Adam adam(params, ::torch::optim::AdamOptions(kLr));
    DistributedOptimizerOptions options;
    options.op = chorus::ReduceOp::kAdasum;
    options.process_set = set;
    DistributedOptimizer optimizer(adam, {{"w", params[0]}, {"b", params[1]}}, options);

    // The reference: per member, its own Adam on copies.
    std::vector<std::vector<::torch::Tensor>> copies(2);
    std::vector<std::unique_ptr<::torch::optim::Adam>> adams;
    for (int r = 0; r < 2; ++r) {
      for (int p = 0; p < 2; ++p) copies[r].push_back(initial(p).requires_grad_());
      adams.push_back(std::make_unique<::torch::optim::Adam>(copies[r], ::torch::optim::AdamOptions(kLr)));
    }
    std::vector<::torch::Tensor> expected = {initial(0), initial(1)};

    for (int step = 0; step < 2; ++step) {
      optimizer.zero_grad();
      ((params[0] * gradient(0, me, step)).sum() + (params[1] * gradient(1, me, step)).sum()).backward();
      ASSERT_NO_THROW(optimizer.step());

      std::vector<std::vector<std::vector<double>>> deltas(2);  // [param][member]
      for (int r = 0; r < 2; ++r) {
        ::torch::NoGradGuard no_grad;
        for (int p = 0; p < 2; ++p) {
          copies[r][p].copy_(expected[p]);
          copies[r][p].mutable_grad() = gradient(p, r, step);
        }
        adams[r]->step();
        for (int p = 0; p < 2; ++p) deltas[p].push_back(as_doubles(copies[r][p] - expected[p]));
      }
      for (int p = 0; p < 2; ++p) {
        const std::vector<double> combined = chorus_test::adasum_reference(deltas[p]);
        // Adasum in float32 (twice its first-order bound), then the start
        // plus the combined change, rounded once to float32.
        const double bound = 2.0 * chorus_test::adasum_tolerance(deltas[p], 0x1p-24);
        const std::vector<double> start = as_doubles(expected[p]);
        const std::vector<double> got = as_doubles(params[p].detach());
        std::vector<double> next(start.size());
        for (size_t i = 0; i < start.size(); ++i) {
          next[i] = start[i] + combined[i];
          ASSERT_NEAR(got[i], next[i], bound + 0x1p-24 * (std::abs(next[i]) + std::abs(start[i])))
              << "parameter " << p << " element " << i << " after step " << step;
        }
        // The parameters are identical on the members; the reference
        // continues from them.
        expected[p] = params[p].detach().clone();
        // The gradient is this rank's own.
        EXPECT_TRUE(params[p].grad().equal(gradient(p, me, step))) << "parameter " << p;
      }
    }
    EXPECT_EQ(optimizer.allreduces_submitted(), 4);
    optimizer.synchronize();  // nothing to wait for
    const chorus::Status skip = thrown_by([&] { auto skipping = optimizer.skip_synchronize(); });
    EXPECT_EQ(skip.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(skip.message(), ::testing::HasSubstr("skip_synchronize() does not apply to op adasum"));
  }();
  test_barrier();
  if (!job) chorus::remove_process_set(set);
}

TEST_F(AdasumOptimizer, GradScalerSkipsAStepWithAnInfOnAnyRank) {
  const bool job = size() == 2;
  std::vector<int> members = {size() - 2, size() - 1};
  const ProcessSet set = job ? ProcessSet::global() : chorus::add_process_set(members);
  const auto where = std::find(members.begin(), members.end(), rank());
  if (where != members.end()) [&] {
    const int me = static_cast<int>(where - members.begin());
    ::torch::Tensor w = initial(1).requires_grad_();
    ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(kLr));
    DistributedOptimizerOptions options;
    options.op = chorus::ReduceOp::kAdasum;
    options.process_set = set;
    DistributedOptimizer optimizer(sgd, {{"w", w}}, options);
    chorus::torch::GradScalerOptions scaler_options;
    scaler_options.init_scale = 4.0;
    chorus::torch::GradScaler scaler(scaler_options);
    for (int step = 0; step < 2; ++step) {
      optimizer.zero_grad();
      // Step 0: an inf on the second member only; step 1: finite everywhere.
      ::torch::Tensor k = gradient(1, me, step);
      if (step == 0 && me == 1) k[2] = std::numeric_limits<float>::infinity();
      scaler.scale((w * k).sum()).backward();
      const ::torch::Tensor before = w.detach().clone();
      bool stepped = false;
      ASSERT_NO_THROW(stepped = scaler.step(optimizer));
      scaler.update();
      EXPECT_EQ(stepped, step == 1) << "step " << step;
      if (step == 0) {
        EXPECT_TRUE(w.detach().equal(before));
        EXPECT_EQ(scaler.get_scale(), 2.0);
      } else {
        // Each member's SGD update (the scale, a power of two, unscales
        // exactly), by a plain SGD on a copy; their Adasum, added.
        std::vector<std::vector<double>> deltas;
        for (int r = 0; r < 2; ++r) {
          ::torch::Tensor copy = before.clone().requires_grad_();
          ::torch::optim::SGD plain({copy}, ::torch::optim::SGDOptions(kLr));
          copy.mutable_grad() = gradient(1, r, step);
          plain.step();
          deltas.push_back(as_doubles(copy.detach() - before));
        }
        const std::vector<double> combined = chorus_test::adasum_reference(deltas);
        const double bound = 2.0 * chorus_test::adasum_tolerance(deltas, 0x1p-24);
        const std::vector<double> start = as_doubles(before);
        const std::vector<double> got = as_doubles(w.detach());
        for (size_t i = 0; i < got.size(); ++i) {
          const double next = start[i] + combined[i];
          EXPECT_NEAR(got[i], next, bound + 0x1p-24 * (std::abs(next) + std::abs(start[i]))) << "element " << i;
        }
      }
    }
  }();
  test_barrier();
  if (!job) chorus::remove_process_set(set);
}

TEST_F(AdasumOptimizer, RefusesASetWhoseSizeIsNotAPowerOfTwo) {
  // np 3: the job. At np 2 every set has 1 or 2 ranks.
  if (size() != 3) return;
  ::torch::Tensor w = ::torch::zeros({3}, ::torch::requires_grad());
  ::torch::optim::SGD sgd({w}, ::torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.op = chorus::ReduceOp::kAdasum;
  const chorus::Status status = thrown_by([&] { DistributedOptimizer optimizer(sgd, {{"w", w}}, options); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "DistributedOptimizer: op adasum needs a process set whose size is a power of two (1, 2, 4, 8, ...), "
            "but process set 0 has 3 ranks");
}

}  // namespace
}  // namespace chorus_test
