// Built only with LibTorch: train_mnist_cuda's torch-free arithmetic against
// what train_mnist does with LibTorch.
//  - ShardSampler gives every rank the shards chorus::torch::DistributedSampler
//    gives it (train_mnist's data order).
//  - The host reference (reference_mlp.h), which the GPU tests hold the GPU
//    code to, computes LibTorch's log-softmax, loss and gradients for
//    Linear-ReLU-Linear with the same parameters, and torch::optim::Adam's step.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>
#include <random>

#include "chorus/torch/data/distributed_sampler.h"
#include "mlp_layout.h"
#include "reference_mlp.h"
#include "shard_sampler.h"

namespace train_mnist_cuda_test {
namespace {

using namespace train_mnist_cuda;

TEST(ShardSamplerVsTorch, SameShardsAsDistributedSampler) {
  for (const int64_t size : {10, 1003, 8000}) {
    for (const int ranks : {1, 2, 3, 8}) {
      for (const uint64_t seed : {0ull, 42ull, 18446744073709551615ull}) {
        for (int rank = 0; rank < ranks; ++rank) {
          chorus::torch::DistributedSampler torch_sampler(size, {true, false, seed}, ranks, rank);
          const ShardSampler ours(size, seed, ranks, rank);
          for (const int64_t epoch : {0, 1, 4}) {
            torch_sampler.set_epoch(epoch);
            ASSERT_EQ(ours.indices(epoch), torch_sampler.indices())
                << "size " << size << " ranks " << ranks << " rank " << rank << " seed " << seed << " epoch " << epoch;
          }
        }
      }
    }
  }
}

torch::Tensor slice_of(const std::vector<float>& flat, const ParameterSlice& slice) {
  torch::Tensor t = torch::from_blob(const_cast<float*>(flat.data()) + slice.offset, {slice.count()}, torch::kFloat32)
                        .to(torch::kFloat64)
                        .clone();
  return slice.rows == 1 ? t : t.view({slice.rows, slice.cols});
}

struct Batch {
  std::vector<float> x;
  std::vector<int32_t> labels;
};

Batch random_batch(int rows, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Batch batch;
  for (int i = 0; i < rows * kInputs; ++i) batch.x.push_back(normal(generator));
  for (int i = 0; i < rows; ++i) batch.labels.push_back(static_cast<int32_t>(generator() % kClasses));
  return batch;
}

TEST(ReferenceVsTorch, ForwardLossAndGradients) {
  const int rows = 37;
  const std::vector<float> parameters = initial_parameters(9);
  const Batch batch = random_batch(rows, 4);
  std::vector<torch::Tensor> leaves;
  for (const ParameterSlice& slice : kParameterSlices) leaves.push_back(slice_of(parameters, slice).requires_grad_());
  const torch::Tensor x =
      torch::from_blob(const_cast<float*>(batch.x.data()), {rows, kInputs}, torch::kFloat32).to(torch::kFloat64);
  const torch::Tensor y = torch::from_blob(const_cast<int32_t*>(batch.labels.data()), {rows}, torch::kInt32)
                              .to(torch::kInt64);
  const torch::Tensor hidden = torch::relu(torch::nn::functional::linear(x, leaves[0], leaves[1]));
  const torch::Tensor log_probs = torch::log_softmax(torch::nn::functional::linear(hidden, leaves[2], leaves[3]), 1);
  const torch::Tensor loss = torch::nn::functional::nll_loss(log_probs, y);  // mean over rows
  loss.backward();

  const std::vector<double> parameters_double(parameters.begin(), parameters.end());
  const ReferencePass pass = reference_pass(parameters_double, batch.x, batch.labels, rows, 1.0 / rows);
  EXPECT_NEAR(pass.loss_sum / rows, loss.item<double>(), 1e-12);
  const torch::Tensor ours_log_probs =
      torch::from_blob(const_cast<double*>(pass.log_probs.data()), {rows, kClasses}, torch::kFloat64);
  EXPECT_LT((ours_log_probs - log_probs.detach()).abs().max().item<double>(), 1e-12);
  for (size_t p = 0; p < leaves.size(); ++p) {
    const ParameterSlice& slice = kParameterSlices[p];
    const torch::Tensor ours =
        torch::from_blob(const_cast<double*>(pass.gradients.data()) + slice.offset, {slice.count()}, torch::kFloat64);
    EXPECT_LT((ours - leaves[p].grad().reshape({slice.count()})).abs().max().item<double>(), 1e-12) << slice.name;
  }
}

TEST(ReferenceVsTorch, AdamSteps) {
  const int64_t n = 1000;
  torch::Tensor parameter = torch::linspace(-1, 1, n, torch::kFloat64).requires_grad_();
  torch::optim::Adam adam({parameter}, torch::optim::AdamOptions(3e-3));
  std::vector<double> ours(static_cast<size_t>(n)), m(ours.size(), 0.0), v(ours.size(), 0.0);
  for (int64_t i = 0; i < n; ++i) ours[static_cast<size_t>(i)] = parameter[i].item<double>();
  for (int64_t t = 1; t <= 5; ++t) {
    const torch::Tensor gradient = torch::sin(parameter.detach() * static_cast<double>(7 * t)) + 0.1;
    parameter.mutable_grad() = gradient.clone();
    adam.step();
    std::vector<double> g(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) g[static_cast<size_t>(i)] = gradient[i].item<double>();
    reference_adam(ours, g, m, v, t, 3e-3);
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(ours[static_cast<size_t>(i)], parameter[i].item<double>(), 1e-12);
}

}  // namespace
}  // namespace train_mnist_cuda_test
