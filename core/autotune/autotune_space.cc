#include "autotune/autotune_space.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace chorus {
namespace {

constexpr uint64_t kFlagFrozen = 1;

// Coordinates in [0, 1] by position between the smallest and the largest
// scaled value.
std::vector<double> normalised(const std::vector<double>& scaled) {
  std::vector<double> out;
  const double lo = *std::min_element(scaled.begin(), scaled.end());
  const double hi = *std::max_element(scaled.begin(), scaled.end());
  for (double v : scaled) out.push_back(hi > lo ? (v - lo) / (hi - lo) : 0.0);
  return out;
}

std::vector<double> coordinates_of(const TuningKnob& knob) {
  std::vector<double> scaled;
  switch (knob.scale) {
    case TuningKnob::Scale::kLinear:
      scaled = knob.candidates;
      break;
    case TuningKnob::Scale::kLog: {
      // A value <= 0 has no logarithm: it sits with the smallest positive one.
      double floor = std::numeric_limits<double>::infinity();
      for (double v : knob.candidates) {
        if (v > 0.0) floor = std::min(floor, v);
      }
      if (std::isinf(floor)) floor = 1.0;
      for (double v : knob.candidates) scaled.push_back(std::log2(std::max(v, floor)));
      break;
    }
    case TuningKnob::Scale::kCategorical:
      // Only equality matters to the model; positions keep them in [0, 1].
      for (size_t i = 0; i < knob.candidates.size(); ++i) scaled.push_back(static_cast<double>(i));
      break;
  }
  return normalised(scaled);
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const TuningSettings& settings) {
  std::ostringstream text;
  text.precision(17);  // every bit: settings compare exactly
  text << "{";
  for (size_t i = 0; i < settings.size(); ++i) text << (i ? ", " : "") << settings[i];
  return out << text.str() << "}";
}

TuningSpace::TuningSpace(std::vector<TuningKnob> knobs) : knobs_(std::move(knobs)) {
  for (const TuningKnob& knob : knobs_) {
    const auto at = std::find(knob.candidates.begin(), knob.candidates.end(), knob.initial);
    start_.push_back(static_cast<int>(at - knob.candidates.begin()));
  }
}

size_t TuningSpace::index_of(const std::string& name) const {
  const auto at = std::find_if(knobs_.begin(), knobs_.end(), [&](const TuningKnob& k) { return k.name == name; });
  return static_cast<size_t>(at - knobs_.begin());
}

KnobValue TuningSpace::value(const TuningSettings& settings, const std::string& name) const {
  const size_t knob = index_of(name);
  return knobs_.at(knob).value_of(settings[knob]);
}

bool TuningSpace::searches(const std::string& name) const {
  const size_t knob = index_of(name);
  return knob < knobs_.size() && knobs_[knob].searched();
}

std::vector<SearchDimension> TuningSpace::dimensions() const {
  std::vector<SearchDimension> dims;
  for (const TuningKnob& knob : knobs_) {
    dims.push_back({knob.name, coordinates_of(knob), knob.scale == TuningKnob::Scale::kCategorical});
  }
  return dims;
}

TuningSettings TuningSpace::settings_at(const SearchPoint& point) const {
  std::vector<double> values;
  for (size_t k = 0; k < knobs_.size(); ++k) {
    values.push_back(knobs_[k].candidates.at(static_cast<size_t>(point.at(k))));
  }
  return TuningSettings(std::move(values));
}

std::string TuningSpace::describe(const TuningSettings& settings) const {
  std::ostringstream out;
  for (size_t k = 0; k < knobs_.size(); ++k) {
    const TuningKnob& knob = knobs_[k];
    out << (k ? ", " : "") << knob.description << " " << knob.format(settings[k])
        << (knob.unit.empty() ? "" : " ") << knob.unit;
  }
  return out.str();
}

std::vector<std::string> TuningSpace::format(const TuningSettings& settings) const {
  std::vector<std::string> text;
  for (size_t k = 0; k < knobs_.size(); ++k) text.push_back(knobs_[k].format(settings[k]));
  return text;
}

Status TuningSpace::apply(const TuningSettings& settings) const {
  for (size_t k = 0; k < knobs_.size(); ++k) {
    const TuningKnob& knob = knobs_[k];
    if (!knob.apply) return Status::Internal("autotune: knob '" + knob.name + "' has no way to be applied");
    CHORUS_RETURN_IF_ERROR(knob.apply(knob.value_of(settings[k])));
  }
  return Status::OK();
}

std::vector<uint64_t> TuningMessage::encode() const {
  std::vector<uint64_t> words = {generation, frozen ? kFlagFrozen : 0};
  for (double value : settings.values()) {
    uint64_t bits = 0;
    static_assert(sizeof(bits) == sizeof(value), "a double is 64 bits");
    std::memcpy(&bits, &value, sizeof(bits));
    words.push_back(bits);
  }
  return words;
}

TuningMessage TuningMessage::decode(const std::vector<uint64_t>& words, size_t knobs) {
  TuningMessage m;
  if (words.size() < TuningMessage::words(knobs)) return m;
  m.generation = words[0];
  m.frozen = (words[1] & kFlagFrozen) != 0;
  std::vector<double> values(knobs);
  for (size_t k = 0; k < knobs; ++k) std::memcpy(&values[k], &words[kHeaderWords + k], sizeof(values[k]));
  m.settings = TuningSettings(std::move(values));
  return m;
}

}  // namespace chorus
