#include "reference_mlp.h"

#include <cmath>

#include "mlp_layout.h"

namespace train_mnist_cuda_test {

using namespace train_mnist_cuda;

ReferencePass reference_pass(const std::vector<double>& parameters, const std::vector<float>& x,
                             const std::vector<int32_t>& labels, int rows, double grad_scale) {
  auto w1 = [&](int j, int k) { return (parameters[size_t(kHiddenWeight.offset + j * kInputs + k)]); };
  auto b1 = [&](int j) { return (parameters[size_t(kHiddenBias.offset + j)]); };
  auto w2 = [&](int c, int j) { return (parameters[size_t(kOutputWeight.offset + c * kHidden + j)]); };
  auto b2 = [&](int c) { return (parameters[size_t(kOutputBias.offset + c)]); };

  ReferencePass pass;
  pass.log_probs.assign(size_t(rows) * kClasses, 0.0);
  if (grad_scale != 0) pass.gradients.assign(size_t(kParameterCount), 0.0);
  std::vector<double> a(kHidden), h(kHidden), z(kClasses), dz(kClasses), dh(kHidden);
  for (int i = 0; i < rows; ++i) {
    const float* xi = x.data() + size_t(i) * kInputs;
    for (int j = 0; j < kHidden; ++j) {
      double sum = b1(j);
      for (int k = 0; k < kInputs; ++k) sum += w1(j, k) * xi[k];
      a[size_t(j)] = sum;
      h[size_t(j)] = sum > 0 ? sum : 0;
    }
    double largest = -INFINITY;
    for (int c = 0; c < kClasses; ++c) {
      double sum = b2(c);
      for (int j = 0; j < kHidden; ++j) sum += w2(c, j) * h[size_t(j)];
      z[size_t(c)] = sum;
      largest = std::max(largest, sum);
    }
    double exp_sum = 0;
    for (int c = 0; c < kClasses; ++c) exp_sum += std::exp(z[size_t(c)] - largest);
    const double log_norm = largest + std::log(exp_sum);
    int best = 0;
    for (int c = 0; c < kClasses; ++c) {
      pass.log_probs[size_t(i) * kClasses + size_t(c)] = z[size_t(c)] - log_norm;
      if (z[size_t(c)] > z[size_t(best)]) best = c;
    }
    const int label = labels[size_t(i)];
    pass.loss_sum -= z[size_t(label)] - log_norm;
    pass.correct += best == label ? 1 : 0;
    if (grad_scale == 0) continue;

    // loss_i = -log softmax(z)[label]: d/dz_c = softmax_c - [c == label].
    for (int c = 0; c < kClasses; ++c) {
      dz[size_t(c)] = (std::exp(z[size_t(c)] - log_norm) - (c == label ? 1.0 : 0.0)) * grad_scale;
    }
    std::vector<double>& g = pass.gradients;
    for (int c = 0; c < kClasses; ++c) {
      for (int j = 0; j < kHidden; ++j) g[size_t(kOutputWeight.offset + c * kHidden + j)] += dz[size_t(c)] * h[size_t(j)];
      g[size_t(kOutputBias.offset + c)] += dz[size_t(c)];
    }
    for (int j = 0; j < kHidden; ++j) {
      double sum = 0;
      for (int c = 0; c < kClasses; ++c) sum += dz[size_t(c)] * w2(c, j);
      dh[size_t(j)] = a[size_t(j)] > 0 ? sum : 0;  // ReLU passes the gradient where it passed the input
    }
    for (int j = 0; j < kHidden; ++j) {
      if (dh[size_t(j)] == 0) continue;
      double* row = g.data() + kHiddenWeight.offset + size_t(j) * kInputs;
      for (int k = 0; k < kInputs; ++k) row[k] += dh[size_t(j)] * xi[k];
      g[size_t(kHiddenBias.offset + j)] += dh[size_t(j)];
    }
  }
  return pass;
}

void reference_adam(std::vector<double>& parameters, const std::vector<double>& gradients, std::vector<double>& m,
                    std::vector<double>& v, int64_t t, double lr, double grad_scale) {
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  const double correction1 = 1 - std::pow(beta1, double(t));
  const double correction2 = 1 - std::pow(beta2, double(t));
  for (size_t i = 0; i < parameters.size(); ++i) {
    const double g = gradients[i] * grad_scale;
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    const double m_hat = m[i] / correction1;
    const double v_hat = v[i] / correction2;
    parameters[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
}

}  // namespace train_mnist_cuda_test
