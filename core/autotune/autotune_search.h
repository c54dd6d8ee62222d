// BayesianSearch: a deterministic, sample-efficient maximiser of a noisy,
// expensive objective over a small grid (the autotuner's knobs, e.g. fusion
// threshold x cycle time x algorithm; autotune_space.h builds that grid).
//
// Each dimension is a list of candidate values, given as coordinates in
// [0, 1] (the caller decides the scale: log for sizes, linear for times, 0
// and 1 for a two-way choice, marked categorical). A dimension with a single
// value is fixed. The
// search proposes one candidate at a time and is told its score:
//   1. the start point (the settings in effect, so the defaults are always
//      measured and the result is never a setting worse than them that was
//      never compared with them);
//   2. random distinct candidates (seeded), until `initial_samples` in all;
//   3. then Bayesian optimisation: a Gaussian process (gaussian_process.h)
//      fitted to every score so far, and the not yet measured candidate
//      with the highest expected improvement over the incumbent;
//   every `remeasure_every`-th guided sample measures again, in turn, the
//   start point (the anchor that tells a drifting machine from a slow region)
//   and the incumbent (so that one lucky measurement does not win on its
//   own); the second-last sample re-measures the start, the last the
//   incumbent.
// The incumbent is the measured candidate with the highest posterior mean
// (not the highest single score): with repeated, noisy measurements the
// posterior mean averages them, and with `drift` the model separates a
// slow change of the whole machine's speed from the settings' effect. Everything depends only on the options and
// the recorded scores, so a search replays exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "autotune/gaussian_process.h"

namespace chorus {

struct SearchDimension {
  std::string name;                 // for error messages
  std::vector<double> coordinates;  // one per candidate value, each in [0, 1]
  // A choice whose values are only equal or different (no order, no
  // distance), e.g. the algorithm; see gaussian_process.h.
  bool categorical = false;
};

struct SearchOptions {
  uint64_t seed = 1;
  int max_samples = 20;      // measurements in all, re-measurements included
  int initial_samples = 4;   // the start point and random candidates
  int remeasure_every = 4;   // every Nth guided sample re-measures the incumbent; 0: never
  double exploration = 0.01; // expected-improvement margin, in standard deviations of the scores
  // Samples are taken one after another while the machine's speed may
  // drift: model a drift over the sample index that every setting shares
  // (gaussian_process.h) and compare settings without it.
  bool drift = true;
  // choice() keeps the start point unless the model puts the incumbent
  // ahead of it by at least this many standard deviations of the difference
  // and by at least min_gain (in score units).
  double confidence = 0.5;
  double min_gain = 0.0;
};

// One index into each dimension's candidates.
using SearchPoint = std::vector<int>;

class BayesianSearch {
 public:
  enum class Kind { kStart, kRandom, kGuided, kRemeasure };
  struct Sample {
    SearchPoint point;
    Kind kind = Kind::kStart;
    double score = 0.0;
    bool best = false;  // the incumbent right after this score was recorded
  };

  // Checks the dimensions (non-empty, coordinates in [0, 1]), the start point
  // and the options; InvalidArgument names what was wrong.
  static Status create(std::vector<SearchDimension> dimensions, const SearchPoint& start,
                       const SearchOptions& options, std::unique_ptr<BayesianSearch>* out);

  // The budget is spent: best() is final.
  bool done() const { return static_cast<int>(samples_.size()) >= options_.max_samples; }
  // The candidate to measure next and why; meaningful while !done().
  const SearchPoint& next() const { return next_; }
  Kind next_kind() const { return next_kind_; }
  // The score of next(); it must be finite. Then proposes the following one.
  Status record(double score);

  // The incumbent (the start point before any score).
  const SearchPoint& best() const { return best_; }
  // The model's estimate of the incumbent's score (0 before any score).
  double best_estimate() const { return best_estimate_; }
  // What to keep: the incumbent if the model is confident that it beats the
  // start point (see SearchOptions::confidence), else the start point, so
  // that noise alone never moves a job away from its starting settings.
  const SearchPoint& choice() const { return choice_; }
  double choice_estimate() const { return choice_estimate_; }
  const std::vector<Sample>& samples() const { return samples_; }
  size_t candidates() const { return total_; }

 private:
  BayesianSearch(std::vector<SearchDimension> dimensions, const SearchPoint& start, const SearchOptions& options);
  SearchPoint point_of(size_t index) const;
  std::vector<double> coordinates_of(const SearchPoint& point) const;
  bool measured(const SearchPoint& point) const;
  // Refits the model and updates the incumbent.
  Status update_model();
  // Chooses next_ and next_kind_ for sample number samples_.size().
  void propose();
  SearchPoint most_promising() const;
  SearchPoint random_unmeasured();

  std::vector<SearchDimension> dimensions_;
  SearchOptions options_;
  size_t total_ = 1;
  std::mt19937_64 rng_;
  std::vector<Sample> samples_;
  int guided_ = 0;  // guided and re-measure samples proposed so far
  int remeasures_ = 0;  // periodic re-measurements proposed so far
  SearchPoint next_;
  Kind next_kind_ = Kind::kStart;
  SearchPoint start_;
  SearchPoint best_;
  double best_estimate_ = 0.0;
  SearchPoint choice_;
  double choice_estimate_ = 0.0;
  GaussianProcess model_;
};

const char* search_kind_name(BayesianSearch::Kind kind);

}  // namespace chorus
