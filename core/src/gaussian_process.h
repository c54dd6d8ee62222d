// GaussianProcess: a small Gaussian-process regression for the autotuner's
// Bayesian optimisation (autotune_search.h). Inputs are points in the unit
// cube, outputs are noisy scores. The kernel is Matern 5/2 with one length
// scale for every continuous dimension. A categorical dimension (a choice
// such as "shared memory or MPI") enters as a factor rho + (1 - rho) [a == b]:
// the categories share most of the objective's shape (rho) and differ by
// the rest, so measuring one category near a good point says the other is
// probably good there too, but uncertain enough to be worth a look. The
// length scale, rho and the noise level are picked from small fixed lists
// by the log marginal likelihood of the data, so the model adapts to how
// smooth and how noisy the objective looks without a gradient-based fit. Scores are standardised (zero mean,
// unit variance) before fitting; predictions are in the caller's units.
//
// Sizes stay tiny (tens of samples), so plain O(n^3) Cholesky is plenty.
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

  // Fits to `x` (each of the same dimension) and scores `y`. Fails on empty
  // or ragged input and on non-finite values.
  Status fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y);
  Prediction predict(const std::vector<double>& point) const;
  bool fitted() const { return !x_.empty(); }
  double length_scale() const { return length_scale_; }
  double noise_variance() const { return noise_; }  // in standardised units
  double category_correlation() const { return rho_; }

 private:
  double kernel(const std::vector<double>& a, const std::vector<double>& b) const;
  // Builds the kernel matrix for the given hyper-parameters and factors it;
  // returns the log marginal likelihood (minus infinity if it is not
  // positive definite).
  double factor(double length_scale, double rho, double noise);

  std::vector<bool> categorical_;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;      // standardised
  double y_mean_ = 0.0;
  double y_scale_ = 1.0;
  double length_scale_ = 0.3;
  double noise_ = 0.1;
  double rho_ = 0.5;
  std::vector<double> chol_;   // lower-triangular factor, row-major n x n
  std::vector<double> alpha_;  // K^-1 y
};

// Expected improvement over `best` (maximisation) of a prediction, with an
// exploration margin `xi` (same units as the mean).
double expected_improvement(const GaussianProcess::Prediction& p, double best, double xi);

}  // namespace chorus
