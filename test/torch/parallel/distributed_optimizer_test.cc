// DistributedOptimizer on real ranks against a single-process reference: each
// rank trains on its shard of a global batch, and also trains a local copy
// of the model without any communication, computing every rank's shard
// itself and combining the shards' gradients as Chorus's allreduce does
// (chorus_average.h: in rank order, then scaled); after a few steps both
// must hold the same parameters, bit for bit. Covers SGD and Adam, the sum
// op, the predivide factor, gradient accumulation, fp16/bf16 compression
// (within its rounding), the clipping pattern, and a parameter that only
// some ranks use.
//
// Why not the whole global batch in one backward pass, within a tolerance:
// that adds the same numbers in another order, and how far the parameters
// then drift depends on the CPU (OpenBLAS picks its kernels, and with them
// the order of the sums in a matrix product, per processor); a bound tuned
// on one machine need not hold on another. The same operations on the same
// tensors give the same bits on any machine.
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"
#include "distributed_optimizer_test_support.h"
#include "support/chorus_average.h"
#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::torch::Compression;
using chorus::torch::DistributedOptimizer;
using chorus::torch::DistributedOptimizerOptions;

using MakeOptimizer =
    std::function<std::unique_ptr<::torch::optim::Optimizer>(std::vector<::torch::Tensor>)>;

constexpr int64_t kRowsPerRank = 32;
constexpr int kSteps = 4;
constexpr int64_t kParameters = 4;  // weight and bias of two layers

std::unique_ptr<::torch::optim::Optimizer> sgd(std::vector<::torch::Tensor> params) {
  return std::make_unique<::torch::optim::SGD>(std::move(params),
                                               ::torch::optim::SGDOptions(0.1).momentum(0.9));
}

std::unique_ptr<::torch::optim::Optimizer> adam(std::vector<::torch::Tensor> params) {
  return std::make_unique<::torch::optim::Adam>(std::move(params),
                                                ::torch::optim::AdamOptions(1e-2));
}

// Mean squared error, or with `sum` the sum of squared errors (whose
// gradients the sum op adds up across ranks).
::torch::Tensor loss_of(Net& model, const Batch& batch, bool sum) {
  const int64_t reduction = sum ? at::Reduction::Sum : at::Reduction::Mean;
  return ::torch::mse_loss(model->forward(batch.x), batch.y, reduction);
}

// Sets each of `parameters`' .grad to what Chorus's allreduce with `options`
// makes of the ranks' gradients in per_rank[i] (indexed by rank).
void combine_as_chorus(const std::vector<::torch::Tensor>& parameters,
                       const std::vector<std::vector<::torch::Tensor>>& per_rank,
                       const DistributedOptimizerOptions& options) {
  for (size_t i = 0; i < parameters.size(); ++i) {
    parameters[i].mutable_grad() = options.op == chorus::ReduceOp::kSum
                                       ? chorus_allreduce_sum(per_rank[i], 1.0, 1.0)
                                       : chorus_average(per_rank[i], options.gradient_predivide_factor);
  }
}

// Every rank's gradients as `backward(r)` leaves them in `parameters`' .grad
// (zeros where it leaves none), indexed [parameter][rank].
template <typename Backward>
std::vector<std::vector<::torch::Tensor>> gradients_of_every_rank(const std::vector<::torch::Tensor>& parameters,
                                                                  ::torch::optim::Optimizer& optimizer,
                                                                  Backward&& backward) {
  std::vector<std::vector<::torch::Tensor>> per_rank(parameters.size());
  for (int r = 0; r < chorus::size(); ++r) {
    optimizer.zero_grad();
    backward(r);
    for (size_t i = 0; i < parameters.size(); ++i) {
      const ::torch::Tensor& grad = parameters[i].grad();
      per_rank[i].push_back(grad.defined() ? grad.clone() : ::torch::zeros_like(parameters[i]));
    }
  }
  return per_rank;
}

class DistributedOptimizerTest : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ::torch::set_num_threads(1);
    ChorusSuite::SetUpTestSuite();
  }

  // Trains on np ranks with `options` and, locally, the reference on every
  // rank's shard; expects the same parameters after kSteps steps.
  void expect_matches_single_process(const MakeOptimizer& make, DistributedOptimizerOptions options,
                                     bool sum_loss, uint64_t seed) {
    Net model = make_net(seed);
    Net reference = make_net(seed + 1);
    copy_parameters(*model, *reference);
    auto wrapped = make(model->parameters());
    auto reference_optimizer = make(reference->parameters());
    DistributedOptimizer optimizer(*wrapped, model->named_parameters(), options);

    const int passes = options.backward_passes_per_step;
    ASSERT_EQ(kRowsPerRank % passes, 0);
    const int64_t rows_per_pass = kRowsPerRank / passes;
    // One rank's passes over its shard of the batch.
    const auto backward = [&](Net& net, const Batch& batch, int r) {
      const Batch mine = shard(batch, r, kRowsPerRank);
      for (int pass = 0; pass < passes; ++pass) {
        ::torch::Tensor loss = loss_of(net, shard(mine, pass, rows_per_pass), sum_loss);
        // Mean losses of equal parts average to the mean of the whole.
        if (!sum_loss) loss = loss / passes;
        loss.backward();
      }
    };
    for (int step = 0; step < kSteps; ++step) {
      const Batch batch = global_batch(step, kRowsPerRank * size());
      optimizer.zero_grad();
      backward(model, batch, rank());
      ASSERT_NO_THROW(optimizer.step());

      const auto parameters = reference->parameters();
      combine_as_chorus(parameters,
                        gradients_of_every_rank(parameters, *reference_optimizer,
                                                [&](int r) { backward(reference, batch, r); }),
                        options);
      reference_optimizer->step();
    }
    EXPECT_TRUE(parameters_equal(*model, *reference));
    // One allreduce per parameter and step, however many passes.
    EXPECT_EQ(optimizer.allreduces_submitted(), kSteps * kParameters);
  }
};

TEST_F(DistributedOptimizerTest, SgdMatchesSingleProcessOnGlobalBatch) {
  DistributedOptimizerOptions options;
  options.name_prefix = "sgd";
  expect_matches_single_process(sgd, options, /*sum_loss=*/false, 11);
}

TEST_F(DistributedOptimizerTest, AdamMatchesSingleProcessOnGlobalBatch) {
  DistributedOptimizerOptions options;
  options.name_prefix = "adam";
  expect_matches_single_process(adam, options, /*sum_loss=*/false, 12);
}

TEST_F(DistributedOptimizerTest, SumOpAddsGradientsOfSummedLosses) {
  DistributedOptimizerOptions options;
  options.name_prefix = "sum";
  options.op = chorus::ReduceOp::kSum;
  auto small_sgd = [](std::vector<::torch::Tensor> params) {
    return std::unique_ptr<::torch::optim::Optimizer>(
        new ::torch::optim::SGD(std::move(params), ::torch::optim::SGDOptions(1e-3)));
  };
  expect_matches_single_process(small_sgd, options, /*sum_loss=*/true, 13);
}

TEST_F(DistributedOptimizerTest, PredivideFactorStillAverages) {
  DistributedOptimizerOptions options;
  options.name_prefix = "predivide";
  options.gradient_predivide_factor = 4.0;
  expect_matches_single_process(adam, options, /*sum_loss=*/false, 14);
}

TEST_F(DistributedOptimizerTest, TwoBackwardPassesOfHalfBatchesEqualOneFullBatch) {
  DistributedOptimizerOptions options;
  options.name_prefix = "accumulate";
  options.backward_passes_per_step = 2;
  expect_matches_single_process(sgd, options, /*sum_loss=*/false, 15);
  options.name_prefix = "accumulate_adam";
  expect_matches_single_process(adam, options, /*sum_loss=*/false, 16);
}

// One step with compression: the averaged gradients equal the uncompressed
// ones up to 16-bit rounding. Elementwise, with u the unit roundoff and m the
// mean of the ranks' |gradients| (the reference computes each rank's): the
// casts cost u*m, the size - 1 additions (size - 1)*u*m, the division and
// the cast of the average u*m, so (size + 1)*u*m in all; the bound allows
// (size + 2)*u*m, plus a little for float16 subnormals.
void expect_within_rounding(Compression compression, double unit_roundoff, uint64_t seed) {
  const int rank = chorus::rank(), size = chorus::size();
  Net model = make_net(seed);
  Net reference = make_net(seed + 1);
  copy_parameters(*model, *reference);
  ::torch::optim::SGD wrapped(model->parameters(), ::torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.compression = compression;
  options.name_prefix = std::string("compressed_") + chorus::torch::compression_name(compression);
  DistributedOptimizer optimizer(wrapped, model->named_parameters(), options);

  const Batch batch = global_batch(0, kRowsPerRank * size);
  optimizer.zero_grad();
  ::torch::mse_loss(model->forward(shard(batch, rank, kRowsPerRank).x),
                    shard(batch, rank, kRowsPerRank).y)
      .backward();
  ASSERT_NO_THROW(optimizer.synchronize());

  // Exact average and sum of |g_r| over the ranks' shards, in float64.
  const auto params = reference->parameters();
  std::vector<::torch::Tensor> mean(params.size()), mean_abs(params.size());
  for (int r = 0; r < size; ++r) {
    for (auto& p : params) p.mutable_grad() = ::torch::Tensor();
    const Batch part = shard(batch, r, kRowsPerRank);
    ::torch::mse_loss(reference->forward(part.x), part.y).backward();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto g = params[i].grad().to(::torch::kDouble) / size;
      mean[i] = r == 0 ? g : mean[i] + g;
      mean_abs[i] = r == 0 ? g.abs() : mean_abs[i] + g.abs();
    }
  }
  const auto named = model->named_parameters();
  bool any_rounded = false;
  for (size_t i = 0; i < named.size(); ++i) {
    const auto actual = named[i].value().grad().to(::torch::kDouble);
    const auto bound = (size + 2) * unit_roundoff * mean_abs[i] + 4e-7;
    const auto error = (actual - mean[i]).abs();
    EXPECT_TRUE((error <= bound).all().item<bool>())
        << named[i].key() << ": max error " << error.max().item<double>() << ", max bound "
        << bound.max().item<double>();
    any_rounded = any_rounded || (error > 1e-12).any().item<bool>();
  }
  // The gradients really went through 16 bits (random float32 values are
  // almost never representable in them).
  EXPECT_TRUE(any_rounded) << "no gradient was rounded: compression did not happen";
  ASSERT_NO_THROW(optimizer.step());
}

TEST_F(DistributedOptimizerTest, Fp16CompressionStaysWithinItsRounding) {
  expect_within_rounding(Compression::kFP16, std::ldexp(1.0, -11), 21);
}

TEST_F(DistributedOptimizerTest, Bf16CompressionStaysWithinItsRounding) {
  expect_within_rounding(Compression::kBF16, std::ldexp(1.0, -8), 22);
}

// synchronize(), clip, then step() inside skip_synchronize(): the reference
// clips the averaged gradients; gradients are reduced exactly once per step.
TEST_F(DistributedOptimizerTest, ClippingBetweenSynchronizeAndStepAllreducesOnce) {
  constexpr double kMaxNorm = 0.05;
  Net model = make_net(31);
  Net reference = make_net(32);
  copy_parameters(*model, *reference);
  ::torch::optim::SGD wrapped(model->parameters(), ::torch::optim::SGDOptions(0.1));
  ::torch::optim::SGD reference_optimizer(reference->parameters(), ::torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.name_prefix = "clip";
  DistributedOptimizer optimizer(wrapped, model->named_parameters(), options);

  for (int step = 0; step < kSteps; ++step) {
    const Batch batch = global_batch(step, kRowsPerRank * size());
    optimizer.zero_grad();
    const Batch mine = shard(batch, rank(), kRowsPerRank);
    ::torch::mse_loss(model->forward(mine.x), mine.y).backward();
    ASSERT_NO_THROW(optimizer.synchronize());
    const double norm = ::torch::nn::utils::clip_grad_norm_(model->parameters(), kMaxNorm);
    ASSERT_GT(norm, kMaxNorm) << "the test must actually clip";
    {
      auto skip = optimizer.skip_synchronize();
      ASSERT_NO_THROW(optimizer.step());
    }
    EXPECT_EQ(optimizer.allreduces_submitted(), (step + 1) * kParameters);

    const auto parameters = reference->parameters();
    combine_as_chorus(parameters, gradients_of_every_rank(parameters, reference_optimizer, [&](int r) {
                        const Batch theirs = shard(batch, r, kRowsPerRank);
                        ::torch::mse_loss(reference->forward(theirs.x), theirs.y).backward();
                      }),
                      options);
    ::torch::nn::utils::clip_grad_norm_(parameters, kMaxNorm);
    reference_optimizer.step();
  }
  EXPECT_TRUE(parameters_equal(*model, *reference));
}

// A branch only rank 0 uses: its hooks never fire elsewhere, so the other
// ranks submit zeros and the average is rank 0's gradient / size, which the
// reference gets by averaging rank 0's gradient with the others' zeros.
struct BranchedNetImpl : NetImpl {
  BranchedNetImpl() : side(register_module("side", ::torch::nn::Linear(kHidden, kOutputs))) {}
  ::torch::Tensor forward(const ::torch::Tensor& x, bool use_side) {
    const auto hidden = ::torch::tanh(first(x));
    return use_side ? last(hidden) + side(hidden) : last(hidden);
  }
  ::torch::nn::Linear side;
};
TORCH_MODULE(BranchedNet);

TEST_F(DistributedOptimizerTest, ParameterUnusedOnSomeRanksGetsZerosThere) {
  ::torch::manual_seed(41);
  BranchedNet model;
  BranchedNet reference;
  copy_parameters(*model, *reference);
  ::torch::optim::SGD wrapped(model->parameters(), ::torch::optim::SGDOptions(0.1));
  ::torch::optim::SGD reference_optimizer(reference->parameters(), ::torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options;
  options.name_prefix = "branch";
  DistributedOptimizer optimizer(wrapped, model->named_parameters(), options);

  for (int step = 0; step < 2; ++step) {
    const Batch batch = global_batch(step, kRowsPerRank * size());
    optimizer.zero_grad();
    const Batch mine = shard(batch, rank(), kRowsPerRank);
    ::torch::mse_loss(model->forward(mine.x, rank() == 0), mine.y).backward();
    if (rank() != 0) {
      EXPECT_FALSE(model->side->weight.grad().defined() &&
                   model->side->weight.grad().abs().sum().item<double>() > 0)
          << "the side branch must have no gradient on rank " << rank();
    }
    ASSERT_NO_THROW(optimizer.step());

    const auto parameters = reference->parameters();
    combine_as_chorus(parameters, gradients_of_every_rank(parameters, reference_optimizer, [&](int r) {
                        const Batch part = shard(batch, r, kRowsPerRank);
                        ::torch::mse_loss(reference->forward(part.x, r == 0), part.y).backward();
                      }),
                      options);
    reference_optimizer.step();
  }
  EXPECT_TRUE(parameters_equal(*model, *reference));
  EXPECT_EQ(optimizer.allreduces_submitted(), 2 * 6);
}

}  // namespace
}  // namespace chorus_test
