#include "autotune/gaussian_process.h"

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
// Share of the variance that is drift over time, and how fast the drift
// moves (in units of the whole search).
constexpr double kDriftShares[] = {0.0, 0.3, 0.6};
constexpr double kDriftLengthScale = 0.2;
// Added to the diagonal so that duplicate points stay positive definite.
constexpr double kJitter = 1e-9;
constexpr double kLog2Pi = 1.8378770664093453;
constexpr double kSqrt2Pi = 2.5066282746310002;

double matern52(double distance, double length_scale) {
  const double r = std::sqrt(5.0) * distance / length_scale;
  return (1.0 + r + r * r / 3.0) * std::exp(-r);
}

}  // namespace

double GaussianProcess::settings_kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  double squared = 0.0;
  double categories = 1.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i < categorical_.size() && categorical_[i]) {
      if (a[i] != b[i]) categories *= rho_;
    } else {
      squared += (a[i] - b[i]) * (a[i] - b[i]);
    }
  }
  return categories * matern52(std::sqrt(squared), length_scale_);
}

Status GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                            const std::vector<double>& times) {
  if (x.empty() || x.size() != y.size()) {
    return Status::InvalidArgument("Gaussian process: got " + std::to_string(x.size()) + " points and " +
                                   std::to_string(y.size()) + " scores; expected the same non-zero number");
  }
  if (!times.empty() && times.size() != y.size()) {
    return Status::InvalidArgument("Gaussian process: got " + std::to_string(times.size()) + " times for " +
                                   std::to_string(y.size()) + " scores; expected none or one per score");
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].size() != x[0].size()) {
      return Status::InvalidArgument("Gaussian process: point " + std::to_string(i) + " has " +
                                     std::to_string(x[i].size()) + " coordinates; expected " +
                                     std::to_string(x[0].size()));
    }
    bool finite = std::isfinite(y[i]) && (times.empty() || std::isfinite(times[i]));
    for (double v : x[i]) finite = finite && std::isfinite(v);
    if (!finite) {
      return Status::InvalidArgument("Gaussian process: sample " + std::to_string(i) +
                                     " has a non-finite coordinate, time or score");
    }
  }
  x_ = x;
  times_ = times;
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
  for (size_t d = 0; d < categorical_.size() && d < x[0].size(); ++d) any_categorical = any_categorical || categorical_[d];
  double best = -std::numeric_limits<double>::infinity();
  double best_length = kLengthScales[0], best_rho = kCategoryCorrelations[0];
  double best_drift = kDriftShares[0], best_noise = kNoiseVariances[0];
  for (double length : kLengthScales) {
    for (double rho : kCategoryCorrelations) {
      if (!any_categorical && rho != kCategoryCorrelations[0]) continue;
      for (double drift : kDriftShares) {
        if (times_.empty() && drift != kDriftShares[0]) continue;
        for (double noise : kNoiseVariances) {
          const double likelihood = factor(length, rho, drift, noise);
          // Strictly greater: ties keep the earlier candidates, so the
          // choice does not depend on rounding order.
          if (likelihood > best) {
            best = likelihood;
            best_length = length;
            best_rho = rho;
            best_drift = drift;
            best_noise = noise;
          }
        }
      }
    }
  }
  factor(best_length, best_rho, best_drift, best_noise);
  return Status::OK();
}

double GaussianProcess::factor(double length_scale, double rho, double drift, double noise) {
  length_scale_ = length_scale;
  rho_ = rho;
  drift_ = drift;
  noise_ = noise;
  const size_t n = x_.size();
  chol_.assign(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double sum = (1.0 - drift) * settings_kernel(x_[i], x_[j]) + (i == j ? noise + kJitter : 0.0);
      if (drift > 0.0) sum += drift * matern52(std::fabs(times_[i] - times_[j]), kDriftLengthScale);
      for (size_t k = 0; k < j; ++k) sum -= chol_[i * n + k] * chol_[j * n + k];
      if (i == j) {
        if (sum <= 0.0) return -std::numeric_limits<double>::infinity();
        chol_[i * n + i] = std::sqrt(sum);
      } else {
        chol_[i * n + j] = sum / chol_[j * n + j];
      }
    }
  }
  white_y_ = y_;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < i; ++k) white_y_[i] -= chol_[i * n + k] * white_y_[k];
    white_y_[i] /= chol_[i * n + i];
  }
  double fit_term = 0.0;
  for (size_t i = 0; i < n; ++i) fit_term += white_y_[i] * white_y_[i];  // y^T K^-1 y
  double log_det = 0.0;
  for (size_t i = 0; i < n; ++i) log_det += 2.0 * std::log(chol_[i * n + i]);
  return -0.5 * fit_term - 0.5 * log_det - 0.5 * static_cast<double>(n) * kLog2Pi;
}

std::vector<double> GaussianProcess::whitened_covariance(const std::vector<double>& point) const {
  const size_t n = x_.size();
  // The drift part is independent of the settings' part: only the latter
  // correlates with the observations through `point`.
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = (1.0 - drift_) * settings_kernel(point, x_[i]);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) v[i] -= chol_[i * n + j] * v[j];
    v[i] /= chol_[i * n + i];
  }
  return v;
}

GaussianProcess::Prediction GaussianProcess::predict(const std::vector<double>& point) const {
  if (x_.empty()) return {};
  // mean = k^T K^-1 y = (L^-1 k)^T (L^-1 y); variance = k(x, x) - |L^-1 k|^2.
  const std::vector<double> v = whitened_covariance(point);
  double mean = 0.0, explained = 0.0;
  for (size_t i = 0; i < v.size(); ++i) {
    mean += v[i] * white_y_[i];
    explained += v[i] * v[i];
  }
  const double variance = std::max(0.0, (1.0 - drift_) - explained);
  // The settings' part has mean zero in standardised units; y_mean_ puts
  // it back on the caller's scale (a constant: it does not change which
  // setting is better).
  return {y_mean_ + mean * y_scale_, std::sqrt(variance) * y_scale_};
}

GaussianProcess::Prediction GaussianProcess::difference(const std::vector<double>& a,
                                                        const std::vector<double>& b) const {
  if (x_.empty()) return {};
  const std::vector<double> va = whitened_covariance(a), vb = whitened_covariance(b);
  const Prediction pa = predict(a), pb = predict(b);
  double posterior_covariance = (1.0 - drift_) * settings_kernel(a, b);
  for (size_t i = 0; i < va.size(); ++i) posterior_covariance -= va[i] * vb[i];
  const double sa = pa.stddev / y_scale_, sb = pb.stddev / y_scale_;
  const double variance = std::max(0.0, sa * sa + sb * sb - 2.0 * posterior_covariance);
  return {pa.mean - pb.mean, std::sqrt(variance) * y_scale_};
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
