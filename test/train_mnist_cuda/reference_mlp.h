// A host reference of train_mnist_cuda's computation, in double precision
// and plain loops over the same row-major layout (mlp_layout.h), written
// from the formulas rather than from the GPU code: the GPU tests compare
// MlpModel, the kernels and Adam with it, a LibTorch test (when built)
// compares it with autograd and torch::optim::Adam, and
// reference_training_test trains with it on the prepared MNIST split.
#pragma once

#include <cstdint>
#include <vector>

namespace train_mnist_cuda_test {

struct ReferencePass {
  std::vector<double> log_probs;  // [rows, 10]
  double loss_sum = 0;            // sum over rows of -log_probs[i][label]
  int64_t correct = 0;            // rows whose largest log-probability is the label
  std::vector<double> gradients;  // kParameterCount: d(grad_scale * loss_sum) / d parameters
};

// Forward (and, when grad_scale is not 0, backward) of x [rows, 784] with
// labels, under `parameters` (kParameterCount values, in double so that a
// training run can keep them so).
ReferencePass reference_pass(const std::vector<double>& parameters, const std::vector<float>& x,
                             const std::vector<int32_t>& labels, int rows, double grad_scale);

// Adam as torch::optim::Adam (no weight decay, no AMSGrad), step t from 1.
void reference_adam(std::vector<double>& parameters, const std::vector<double>& gradients, std::vector<double>& m,
                    std::vector<double>& v, int64_t t, double lr, double grad_scale = 1.0);

}  // namespace train_mnist_cuda_test
