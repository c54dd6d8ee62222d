#include "autotune/autotune_knob.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace chorus {

TuningKnob TuningKnob::numeric(std::string name, std::string description, std::string unit, Scale scale,
                               std::vector<double> grid, double initial, bool searched) {
  TuningKnob knob;
  knob.name = std::move(name);
  knob.description = std::move(description);
  knob.unit = std::move(unit);
  knob.scale = scale;
  if (searched) knob.candidates = std::move(grid);
  if (std::find(knob.candidates.begin(), knob.candidates.end(), initial) == knob.candidates.end()) {
    knob.candidates.push_back(initial);
  }
  std::sort(knob.candidates.begin(), knob.candidates.end());
  knob.initial = initial;
  return knob;
}

TuningKnob TuningKnob::categorical(std::string name, std::string description, std::vector<std::string> labels,
                                   size_t initial, bool searched) {
  TuningKnob knob;
  knob.name = std::move(name);
  knob.description = std::move(description);
  knob.scale = Scale::kCategorical;
  knob.labels = std::move(labels);
  knob.initial = static_cast<double>(initial);
  if (searched) {
    for (size_t i = 0; i < knob.labels.size(); ++i) knob.candidates.push_back(static_cast<double>(i));
  } else {
    knob.candidates = {knob.initial};
  }
  return knob;
}

TuningKnob TuningKnob::applied_by(Apply apply_with) && {
  apply = std::move(apply_with);
  return std::move(*this);
}

KnobValue TuningKnob::value_of(double number) const {
  KnobValue value;
  value.number = number;
  if (scale == Scale::kCategorical) value.label = labels.at(static_cast<size_t>(number));
  return value;
}

std::string TuningKnob::format(double number) const {
  if (scale == Scale::kCategorical) return labels.at(static_cast<size_t>(number));
  char text[32];
  // Whole numbers below 2^53 are exact as integers; %lld keeps large byte
  // counts out of exponent notation.
  if (number == std::trunc(number) && std::fabs(number) < 9007199254740992.0) {
    std::snprintf(text, sizeof(text), "%lld", static_cast<long long>(number));
  } else {
    std::snprintf(text, sizeof(text), "%.10g", number);
  }
  return text;
}

}  // namespace chorus
