// The reference MLP's parameters as one flat float32 array, the same on the
// GPU and in checkpoints: Linear(784, 128) "hidden", ReLU, Linear(128, 10)
// "output", named as train_mnist's Mlp names them.
//
//   offset   parameter       shape       row-major, as LibTorch's Linear
//   0        hidden.weight   [128, 784]  W1[j][k]: input k -> hidden unit j
//   100352   hidden.bias     [128]
//   100480   output.weight   [10, 128]   W2[c][j]: hidden unit j -> class c
//   101760   output.bias     [10]
//   101770   (total)
//
// Gradients and Adam's two moments use the same layout, so one kernel steps
// all parameters and one allreduce per tensor averages its gradient.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace train_mnist_cuda {

constexpr int kInputs = 28 * 28;
constexpr int kHidden = 128;
constexpr int kClasses = 10;

struct ParameterSlice {
  const char* name;
  int64_t offset;  // in floats, into the flat array
  int64_t rows;    // 1 for a bias
  int64_t cols;
  int64_t count() const { return rows * cols; }
};

constexpr ParameterSlice kHiddenWeight{"hidden.weight", 0, kHidden, kInputs};
constexpr ParameterSlice kHiddenBias{"hidden.bias", kHiddenWeight.offset + kHidden * kInputs, 1, kHidden};
constexpr ParameterSlice kOutputWeight{"output.weight", kHiddenBias.offset + kHidden, kClasses, kHidden};
constexpr ParameterSlice kOutputBias{"output.bias", kOutputWeight.offset + kClasses * kHidden, 1, kClasses};
constexpr int64_t kParameterCount = kOutputBias.offset + kClasses;
constexpr ParameterSlice kParameterSlices[] = {kHiddenWeight, kHiddenBias, kOutputWeight, kOutputBias};

// LibTorch's default initialisation of Linear(in, out), drawn from `seed`
// the same way on every machine: every weight and bias uniform in
// [-1/sqrt(in), 1/sqrt(in)] (kaiming_uniform with a = sqrt(5) reduces to
// that bound). Not LibTorch's random numbers: a torch-free program cannot
// reproduce them, and it needs to agree only with itself across ranks.
std::vector<float> initial_parameters(uint64_t seed);

// "kind mlp\nparameter hidden.weight 128 784\n...": what a checkpoint
// records so that one written for another model is refused by name.
std::string mlp_signature();

}  // namespace train_mnist_cuda
