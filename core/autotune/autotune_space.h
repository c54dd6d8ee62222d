// What the autotuner searches: a list of knobs (autotune_knob.h), each a grid
// of candidates for BayesianSearch (autotune_search.h), and how a chosen
// setting travels from rank 0 to every rank.
//
// The space knows knobs only through their generic description, so adding
// one (runtime.cc, tuning_knobs()) changes neither the search, nor the
// message, nor the log: they loop over the list.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "autotune/autotune_knob.h"
#include "autotune/autotune_search.h"

namespace chorus {

// One value per knob of a TuningSpace, in its order (a number, or a
// categorical knob's label index; TuningSpace::value gives a knob's by name).
class TuningSettings {
 public:
  TuningSettings() = default;
  explicit TuningSettings(std::vector<double> values) : values_(std::move(values)) {}
  TuningSettings(std::initializer_list<double> values) : values_(values) {}

  size_t size() const { return values_.size(); }
  double operator[](size_t knob) const { return values_.at(knob); }
  const std::vector<double>& values() const { return values_; }

  // Exact: a value that travelled between ranks is the one that was sent.
  bool operator==(const TuningSettings& other) const { return values_ == other.values_; }
  bool operator!=(const TuningSettings& other) const { return !(*this == other); }

 private:
  std::vector<double> values_;
};

// "{67108864, 0, 0}", every digit (for test failures; describe() is for people).
std::ostream& operator<<(std::ostream& out, const TuningSettings& settings);

class TuningSpace {
 public:
  // The knobs' order is the search's dimensions', the message's and the log's
  // columns'.
  explicit TuningSpace(std::vector<TuningKnob> knobs);

  const std::vector<TuningKnob>& knobs() const { return knobs_; }
  // The index of the knob called `name`, or knobs().size() if there is none.
  size_t index_of(const std::string& name) const;
  // Knob `name`'s value in `settings` (std::out_of_range if there is no such knob).
  KnobValue value(const TuningSettings& settings, const std::string& name) const;
  // Knob `name` has more than one candidate.
  bool searches(const std::string& name) const;

  std::vector<SearchDimension> dimensions() const;
  // The settings in effect at init().
  SearchPoint start() const { return start_; }
  TuningSettings settings_at(const SearchPoint& point) const;
  // "fusion threshold 8388608 bytes, cycle time 2.5 ms, algorithm shm".
  std::string describe(const TuningSettings& settings) const;
  // Each value as the log writes it ("8388608", "2.5", "shm").
  std::vector<std::string> format(const TuningSettings& settings) const;
  // Applies every knob's value in order (TuningKnob::apply); the first error
  // stops it. A knob without an apply callback is an Internal error.
  Status apply(const TuningSettings& settings) const;

 private:
  std::vector<TuningKnob> knobs_;
  SearchPoint start_;
};

// The settings and the sample they belong to, as words that ride along the
// negotiation's OR allreduce (rank 0 writes them, the others write zeros,
// so every rank reads rank 0's bits exactly). Each knob's value travels as
// the bits of its double, not as an index into a grid: grids can differ
// between ranks (a cycle time set on rank 0 only, which is rank 0's alone),
// and a categorical knob's label index is the same on every rank.
struct TuningMessage {
  // generation, then flags; then one word per knob.
  static constexpr size_t kHeaderWords = 2;
  // The words for `knobs` knobs: the same on every rank, which run the same knobs.
  static size_t words(size_t knobs) { return kHeaderWords + knobs; }

  uint64_t generation = 0;  // 0: nothing published yet; changes with every new setting
  bool frozen = false;      // the search is over; these settings stay
  TuningSettings settings;

  std::vector<uint64_t> encode() const;
  // Words for fewer than `knobs` knobs decode as nothing published.
  static TuningMessage decode(const std::vector<uint64_t>& words, size_t knobs);
};

}  // namespace chorus
