#include "autotune/autotune_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace chorus {
namespace {

// Every candidate is scored by the model each time a sample is proposed; a
// grid beyond this is a mistake in the caller, not a search to run.
constexpr size_t kMaxCandidates = 1000000;
constexpr int kMaxSamples = 10000;

Status bad_option(const std::string& what, const std::string& value, const std::string& expected) {
  return Status::InvalidArgument("autotune search: " + what + " is " + value + "; expected " + expected);
}

}  // namespace

const char* search_kind_name(BayesianSearch::Kind kind) {
  switch (kind) {
    case BayesianSearch::Kind::kStart: return "start";
    case BayesianSearch::Kind::kRandom: return "random";
    case BayesianSearch::Kind::kGuided: return "guided";
    case BayesianSearch::Kind::kRemeasure: return "remeasure";
  }
  return "unknown";
}

Status BayesianSearch::create(std::vector<SearchDimension> dimensions, const SearchPoint& start,
                              const SearchOptions& options, std::unique_ptr<BayesianSearch>* out) {
  if (dimensions.empty()) return bad_option("the number of dimensions", "0", "at least one");
  size_t total = 1;
  for (const SearchDimension& d : dimensions) {
    if (d.coordinates.empty()) {
      return Status::InvalidArgument("autotune search: dimension '" + d.name +
                                     "' has no candidate values; expected at least one");
    }
    for (double c : d.coordinates) {
      if (!(c >= 0.0 && c <= 1.0)) {
        return Status::InvalidArgument("autotune search: dimension '" + d.name + "' has coordinate " +
                                       std::to_string(c) + "; expected coordinates in [0, 1]");
      }
    }
    if (d.coordinates.size() > kMaxCandidates / total) {
      return bad_option("the number of candidates", "above " + std::to_string(kMaxCandidates),
                        "at most " + std::to_string(kMaxCandidates));
    }
    total *= d.coordinates.size();
  }
  if (start.size() != dimensions.size()) {
    return bad_option("the start point's size", std::to_string(start.size()),
                      std::to_string(dimensions.size()) + " (one index per dimension)");
  }
  for (size_t i = 0; i < start.size(); ++i) {
    if (start[i] < 0 || start[i] >= static_cast<int>(dimensions[i].coordinates.size())) {
      return bad_option("the start index of dimension '" + dimensions[i].name + "'", std::to_string(start[i]),
                        "an index in [0, " + std::to_string(dimensions[i].coordinates.size() - 1) + "]");
    }
  }
  if (options.max_samples < 1 || options.max_samples > kMaxSamples) {
    return bad_option("max_samples", std::to_string(options.max_samples),
                      "an integer in [1, " + std::to_string(kMaxSamples) + "]");
  }
  if (options.initial_samples < 1 || options.initial_samples > options.max_samples) {
    return bad_option("initial_samples", std::to_string(options.initial_samples),
                      "an integer in [1, max_samples = " + std::to_string(options.max_samples) + "]");
  }
  if (options.remeasure_every < 0) {
    return bad_option("remeasure_every", std::to_string(options.remeasure_every), "0 (never) or more");
  }
  if (!std::isfinite(options.exploration) || options.exploration < 0.0) {
    return bad_option("exploration", std::to_string(options.exploration), "a finite number >= 0");
  }
  if (!std::isfinite(options.confidence) || options.confidence < 0.0) {
    return bad_option("confidence", std::to_string(options.confidence), "a finite number >= 0");
  }
  if (!std::isfinite(options.min_gain) || options.min_gain < 0.0) {
    return bad_option("min_gain", std::to_string(options.min_gain), "a finite number >= 0");
  }
  out->reset(new BayesianSearch(std::move(dimensions), start, options));
  (*out)->total_ = total;
  return Status::OK();
}

BayesianSearch::BayesianSearch(std::vector<SearchDimension> dimensions, const SearchPoint& start,
                               const SearchOptions& options)
    : dimensions_(std::move(dimensions)),
      options_(options),
      rng_(options.seed),
      next_(start),
      start_(start),
      best_(start),
      choice_(start) {
  std::vector<bool> categorical;
  for (const SearchDimension& d : dimensions_) categorical.push_back(d.categorical);
  model_ = GaussianProcess(std::move(categorical));
}

SearchPoint BayesianSearch::point_of(size_t index) const {
  SearchPoint point(dimensions_.size());
  for (size_t d = dimensions_.size(); d-- > 0;) {
    const size_t n = dimensions_[d].coordinates.size();
    point[d] = static_cast<int>(index % n);
    index /= n;
  }
  return point;
}

std::vector<double> BayesianSearch::coordinates_of(const SearchPoint& point) const {
  std::vector<double> x(point.size());
  for (size_t d = 0; d < point.size(); ++d) x[d] = dimensions_[d].coordinates[static_cast<size_t>(point[d])];
  return x;
}

bool BayesianSearch::measured(const SearchPoint& point) const {
  for (const Sample& s : samples_) {
    if (s.point == point) return true;
  }
  return false;
}

Status BayesianSearch::record(double score) {
  if (done()) {
    return Status::PreconditionFailed("autotune search: all " + std::to_string(options_.max_samples) +
                                      " samples are recorded; expected no further score");
  }
  if (!std::isfinite(score)) {
    return Status::InvalidArgument("autotune search: score " + std::to_string(score) + " of sample " +
                                   std::to_string(samples_.size()) + " is invalid; expected a finite number");
  }
  samples_.push_back(Sample{next_, next_kind_, score, false});
  CHORUS_RETURN_IF_ERROR(update_model());
  samples_.back().best = best_ == samples_.back().point;
  if (!done()) propose();
  return Status::OK();
}

Status BayesianSearch::update_model() {
  std::vector<std::vector<double>> x;
  std::vector<double> y, times;
  for (const Sample& s : samples_) {
    x.push_back(coordinates_of(s.point));
    y.push_back(s.score);
    if (options_.drift) {
      times.push_back(static_cast<double>(times.size()) / std::max(1, options_.max_samples - 1));
    }
  }
  CHORUS_RETURN_IF_ERROR(model_.fit(x, y, times));
  // Strictly greater: ties go to the earliest measured point (the start).
  double best = -std::numeric_limits<double>::infinity();
  for (const Sample& s : samples_) {
    const double mean = model_.predict(coordinates_of(s.point)).mean;
    if (mean > best) {
      best = mean;
      best_ = s.point;
    }
  }
  best_estimate_ = best;
  choice_ = best_;
  choice_estimate_ = best_estimate_;
  if (best_ != start_ && measured(start_)) {
    const GaussianProcess::Prediction gain = model_.difference(coordinates_of(best_), coordinates_of(start_));
    if (gain.mean < std::max(options_.min_gain, options_.confidence * gain.stddev)) {
      choice_ = start_;
      choice_estimate_ = model_.predict(coordinates_of(start_)).mean;
    }
  }
  return Status::OK();
}

void BayesianSearch::propose() {
  const int n = static_cast<int>(samples_.size());
  if (n < options_.initial_samples) {
    next_ = random_unmeasured();
    next_kind_ = Kind::kRandom;
    if (!next_.empty()) return;
  }
  const bool last = n == options_.max_samples - 1;
  const bool second_last = n == options_.max_samples - 2;
  const int guided = guided_++;
  const Sample& previous = samples_.back();
  const bool just_remeasured = previous.kind == Kind::kRemeasure && previous.point == best_;
  const bool periodic = options_.remeasure_every > 0 && (guided + 1) % options_.remeasure_every == 0;
  // Near the end the start point is measured again when it is not the
  // incumbent: choice() compares the two, and a start measured only at the
  // beginning would be confounded with any drift since.
  if (second_last && best_ != start_ && n >= options_.initial_samples + 1) {
    next_ = start_;
    next_kind_ = Kind::kRemeasure;
    return;
  }
  // Periodic re-measurements alternate between the start point and the
  // incumbent. The start is the drift's anchor: measured at regular
  // intervals, it tells a machine that slowed down from a region of the
  // space that is slower (without it, a stretch of samples in one region
  // can pass its own slowness off as drift).
  if (periodic && !last && best_ != start_ && remeasures_++ % 2 == 0) {
    next_ = start_;
    next_kind_ = Kind::kRemeasure;
    return;
  }
  if ((periodic || last) && !just_remeasured) {
    next_ = best_;
    next_kind_ = Kind::kRemeasure;
    return;
  }
  next_ = most_promising();
  next_kind_ = Kind::kGuided;
}

SearchPoint BayesianSearch::random_unmeasured() {
  // A random index, then the first unmeasured candidate from there on: a
  // bounded, deterministic draw (rng_() % total rather than a distribution
  // object, whose algorithm differs between standard libraries).
  const size_t first = static_cast<size_t>(rng_() % total_);
  for (size_t step = 0; step < total_; ++step) {
    SearchPoint point = point_of((first + step) % total_);
    if (!measured(point)) return point;
  }
  return {};
}

SearchPoint BayesianSearch::most_promising() const {
  double mean = 0.0;
  for (const Sample& s : samples_) mean += s.score;
  mean /= static_cast<double>(samples_.size());
  double variance = 0.0;
  for (const Sample& s : samples_) variance += (s.score - mean) * (s.score - mean);
  const double spread = std::sqrt(variance / static_cast<double>(samples_.size()));
  const double xi = options_.exploration * (spread > 0.0 ? spread : 1.0);
  double best_gain = -1.0;
  SearchPoint choice = best_;
  // Re-measuring is the schedule's job (kRemeasure): a guided sample goes
  // to a candidate not measured yet, so that noise around the incumbent
  // does not keep the search measuring the same point. Only when every
  // candidate was measured are they all eligible.
  std::set<SearchPoint> distinct;
  for (const Sample& sample : samples_) distinct.insert(sample.point);
  const bool all_measured = distinct.size() >= total_;
  for (size_t index = 0; index < total_; ++index) {
    SearchPoint point = point_of(index);
    if (!all_measured && measured(point)) continue;
    const double gain = expected_improvement(model_.predict(coordinates_of(point)), best_estimate_, xi);
    if (gain > best_gain) {
      best_gain = gain;
      choice = std::move(point);
    }
  }
  return choice;
}

}  // namespace chorus
