// GaussianProcess: a small Gaussian-process regression for the autotuner's
// Bayesian optimisation (autotune_search.h). Inputs are points in the unit
// cube, outputs are noisy scores, standardised (zero mean, unit variance)
// before fitting; predictions are in the caller's units.
//
// Kernel: Matern 5/2 with one length scale for the continuous dimensions. A
// categorical dimension (a choice such as "shared memory or MPI") enters as a
// factor rho + (1 - rho) [a == b]: the categories share most of the
// objective's shape (rho) and differ by the rest, so measuring one category
// near a good point says the other is probably good there too, but uncertain
// enough to be worth a look.
//
// Drift: on a shared machine the whole job speeds up and slows down as other
// work comes and goes, so a setting measured in a quiet minute looks better
// than one measured in a busy one. When the samples carry the time they were
// taken, the model adds a smooth function of time that every setting shares
// (k = (1 - w) k_settings + w k_time), and predict() returns the settings'
// part alone: settings are compared as if measured at the same moment.
//
// The length scale, rho, the drift share w and the noise level are picked
// from small fixed lists by the log marginal likelihood of the data, so the
// model adapts to how smooth, drifting and noisy the objective looks without
// a gradient-based fit. Sizes stay tiny (tens of samples): plain O(n^3)
// Cholesky is plenty.
#pragma once

#include <utility>
#include <vector>

#include "chorus/status.h"

namespace chorus {

class GaussianProcess {
 public:
  struct Prediction {
    double mean = 0.0;
    double stddev = 0.0;  // of the latent function, without observation noise
  };

  // `categorical[d]` marks dimension d as a choice whose coordinates only
  // compare equal or not; dimensions beyond its size are continuous.
  explicit GaussianProcess(std::vector<bool> categorical = {}) : categorical_(std::move(categorical)) {}

  // Fits to `x` (each of the same dimension) and scores `y`; `times` (empty,
  // or one per score, in [0, 1]) when the score may drift over time. Fails on
  // empty or ragged input and on non-finite values.
  Status fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
             const std::vector<double>& times = {});
  // The settings' part at `point` (without the drift).
  Prediction predict(const std::vector<double>& point) const;
  // The settings' part of f(a) - f(b), with the posterior covariance of the
  // two taken into account (both measured often: a small spread).
  Prediction difference(const std::vector<double>& a, const std::vector<double>& b) const;
  bool fitted() const { return !x_.empty(); }
  double length_scale() const { return length_scale_; }
  double noise_variance() const { return noise_; }  // in standardised units
  double category_correlation() const { return rho_; }
  double drift_share() const { return drift_; }

 private:
  double settings_kernel(const std::vector<double>& a, const std::vector<double>& b) const;
  // L^-1 times the covariance of the settings' part at `point` with every
  // observation.
  std::vector<double> whitened_covariance(const std::vector<double>& point) const;
  // Builds the kernel matrix for the given hyper-parameters and factors it;
  // returns the log marginal likelihood (minus infinity if it is not
  // positive definite).
  double factor(double length_scale, double rho, double drift, double noise);

  std::vector<bool> categorical_;
  std::vector<std::vector<double>> x_;
  std::vector<double> times_;  // empty: no drift term
  std::vector<double> y_;      // standardised
  double y_mean_ = 0.0;
  double y_scale_ = 1.0;
  double length_scale_ = 0.3;
  double noise_ = 0.1;
  double rho_ = 0.5;
  double drift_ = 0.0;
  std::vector<double> chol_;   // lower-triangular factor, row-major n x n
  std::vector<double> white_y_;  // L^-1 y
};

// Expected improvement over `best` (maximisation) of a prediction, with an
// exploration margin `xi` (same units as the mean).
double expected_improvement(const GaussianProcess::Prediction& p, double best, double xi);

}  // namespace chorus
