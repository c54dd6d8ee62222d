// Shared pieces of the DistributedOptimizer tests: a small MLP, the global
// batch of a step (the same on every rank, generated from the step number),
// each rank's shard of it, copies of a model for the single-process
// reference, and a bitwise comparison of their parameters.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "chorus/torch/distributed_optimizer.h"

namespace chorus_test {

constexpr int64_t kInputs = 8;
constexpr int64_t kHidden = 16;
constexpr int64_t kOutputs = 4;

// Parameters (in named_parameters() order): first.weight, first.bias,
// last.weight, last.bias.
struct NetImpl : ::torch::nn::Module {
  NetImpl()
      : first(register_module("first", ::torch::nn::Linear(kInputs, kHidden))),
        last(register_module("last", ::torch::nn::Linear(kHidden, kOutputs))) {}
  ::torch::Tensor forward(const ::torch::Tensor& x) { return last(::torch::tanh(first(x))); }
  ::torch::nn::Linear first;
  ::torch::nn::Linear last;
};
TORCH_MODULE(Net);

// A model initialised from `seed`, identical on every rank.
inline Net make_net(uint64_t seed) {
  ::torch::manual_seed(seed);
  return Net();
}

// Overwrites `to`'s parameters with `from`'s (same architecture).
inline void copy_parameters(::torch::nn::Module& from, ::torch::nn::Module& to) {
  ::torch::NoGradGuard no_grad;
  auto source = from.parameters();
  auto target = to.parameters();
  for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

struct Batch {
  ::torch::Tensor x;
  ::torch::Tensor y;
};

// The global batch of `step`: every rank generates the same one.
inline Batch global_batch(int step, int64_t rows) {
  ::torch::manual_seed(static_cast<uint64_t>(7919 + step));
  Batch batch;
  batch.x = ::torch::randn({rows, kInputs});
  batch.y = ::torch::randn({rows, kOutputs});
  return batch;
}

// Rows [part * rows, (part + 1) * rows) of `batch`.
inline Batch shard(const Batch& batch, int64_t part, int64_t rows) {
  return {batch.x.narrow(0, part * rows, rows), batch.y.narrow(0, part * rows, rows)};
}

// Every parameter of `actual` equals `expected`'s bit for bit (same
// architecture); otherwise names the first that differs and by how much.
inline ::testing::AssertionResult parameters_equal(::torch::nn::Module& actual, ::torch::nn::Module& expected) {
  const auto a = actual.named_parameters();
  const auto e = expected.named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!::torch::equal(a[i].value(), e[i].value())) {
      return ::testing::AssertionFailure() << a[i].key() << " differs from the reference by up to "
                                           << (a[i].value() - e[i].value()).abs().max().item<double>();
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace chorus_test
