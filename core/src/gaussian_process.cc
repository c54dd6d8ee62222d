#include "gaussian_process.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace chorus {
namespace {

// Candidate hyper-parameters (unit cube inputs, standardised outputs). The
// shortest length scale still spans a few grid steps of the autotuner's
// space; the largest noise level lets repeated noisy measurements of one
// point average out instead of being interpolated.
constexpr double kLengthScales[] = {0.15, 0.25, 0.4, 0.65, 1.0};
constexpr double kNoiseVariances[] = {1e-4, 0.01, 0.05, 0.2, 0.5};
// How much of the objective categories share (see the header).
constexpr double kCategoryCorrelations[] = {0.4, 0.8};
// Added to the diagonal so that duplicate points stay positive definite.
constexpr double kJitter = 1e-9;
constexpr double kLog2Pi = 1.8378770664093453;
constexpr double kSqrt2Pi = 2.5066282746310002;

}  // namespace

double GaussianProcess::kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  double squared = 0.0;
  double categories = 1.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i < categorical_.size() && categorical_[i]) {
      if (a[i] != b[i]) categories *= rho_;
    } else {
      squared += (a[i] - b[i]) * (a[i] - b[i]);
    }
  }
  const double r = std::sqrt(5.0 * squared) / length_scale_;
  return categories * (1.0 + r + r * r / 3.0) * std::exp(-r);
}

Status GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y) {
  if (x.empty() || x.size() != y.size()) {
    return Status::InvalidArgument("Gaussian process: got " + std::to_string(x.size()) + " points and " +
                                   std::to_string(y.size()) + " scores; expected the same non-zero number");
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != x[0].size()) {
      return Status::InvalidArgument("Gaussian process: point " + std::to_string(i) + " has " +
                                     std::to_string(x[i].size()) + " coordinates; expected " +
                                     std::to_string(x[0].size()));
    }
    for (double v : x[i]) {
      if (!std::isfinite(v)) return Status::InvalidArgument("Gaussian process: point " + std::to_string(i) +
                                                            " has a non-finite coordinate");
    }
    if (!std::isfinite(y[i])) {
      return Status::InvalidArgument("Gaussian process: score " + std::to_string(i) + " is not finite");
    }
  }
  x_ = x;
  double mean = 0.0;
  for (double v : y) mean += v;
  mean /= static_cast<double>(y.size());
  double variance = 0.0;
  for (double v : y) variance += (v - mean) * (v - mean);
  variance /= static_cast<double>(y.size());
  y_mean_ = mean;
  // Identical scores carry no shape: any positive scale will do.
  y_scale_ = variance > 0.0 ? std::sqrt(variance) : 1.0;
  y_.resize(y.size());
  for (size_t i = 0; i < y.size(); ++i) y_[i] = (y[i] - y_mean_) / y_scale_;

  bool any_categorical = false;
  for (size_t d = 0; d < categorical_.size() && d < x[0].size(); ++d) any_categorical |= categorical_[d];
  double best = -std::numeric_limits<double>::infinity();
  double best_length = kLengthScales[0], best_rho = kCategoryCorrelations[0], best_noise = kNoiseVariances[0];
  for (double length : kLengthScales) {
    for (double rho : kCategoryCorrelations) {
      if (!any_categorical && rho != kCategoryCorrelations[0]) continue;
      for (double noise : kNoiseVariances) {
        const double likelihood = factor(length, rho, noise);
        // Strictly greater: ties keep the earlier candidates, so the choice
        // does not depend on rounding order.
        if (likelihood > best) {
          best = likelihood;
          best_length = length;
          best_rho = rho;
          best_noise = noise;
        }
      }
    }
  }
  factor(best_length, best_rho, best_noise);
  return Status::OK();
}

double GaussianProcess::factor(double length_scale, double rho, double noise) {
  length_scale_ = length_scale;
  rho_ = rho;
  noise_ = noise;
  const size_t n = x_.size();
  chol_.assign(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double sum = kernel(x_[i], x_[j]) + (i == j ? noise + kJitter : 0.0);
      for (size_t k = 0; k < j; ++k) sum -= chol_[i * n + k] * chol_[j * n + k];
      if (i == j) {
        if (sum <= 0.0) return -std::numeric_limits<double>::infinity();
        chol_[i * n + i] = std::sqrt(sum);
      } else {
        chol_[i * n + j] = sum / chol_[j * n + j];
      }
    }
  }
  // alpha = L^-T L^-1 y.
  alpha_ = y_;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < i; ++k) alpha_[i] -= chol_[i * n + k] * alpha_[k];
    alpha_[i] /= chol_[i * n + i];
  }
  double fit_term = 0.0;
  for (size_t i = 0; i < n; ++i) fit_term += alpha_[i] * alpha_[i];  // y^T K^-1 y
  for (size_t i = n; i-- > 0;) {
    for (size_t k = i + 1; k < n; ++k) alpha_[i] -= chol_[k * n + i] * alpha_[k];
    alpha_[i] /= chol_[i * n + i];
  }
  double log_det = 0.0;
  for (size_t i = 0; i < n; ++i) log_det += 2.0 * std::log(chol_[i * n + i]);
  return -0.5 * fit_term - 0.5 * log_det - 0.5 * static_cast<double>(n) * kLog2Pi;
}

GaussianProcess::Prediction GaussianProcess::predict(const std::vector<double>& point) const {
  const size_t n = x_.size();
  if (n == 0) return {};
  std::vector<double> k(n);
  for (size_t i = 0; i < n; ++i) k[i] = kernel(point, x_[i]);
  double mean = 0.0;
  for (size_t i = 0; i < n; ++i) mean += k[i] * alpha_[i];
  // v = L^-1 k; the latent variance is k(x, x) - v^T v, with k(x, x) = 1.
  std::vector<double> v = k;
  double explained = 0.0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) v[i] -= chol_[i * n + j] * v[j];
    v[i] /= chol_[i * n + i];
    explained += v[i] * v[i];
  }
  const double variance = std::max(0.0, 1.0 - explained);
  return {y_mean_ + mean * y_scale_, std::sqrt(variance) * y_scale_};
}

double expected_improvement(const GaussianProcess::Prediction& p, double best, double xi) {
  const double gain = p.mean - best - xi;
  if (p.stddev <= 0.0) return std::max(0.0, gain);
  const double z = gain / p.stddev;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / kSqrt2Pi;
  return gain * cdf + p.stddev * pdf;
}

}  // namespace chorus
