#include "chorus/torch/checkpoint/metric_mode.h"

#include <limits>

#include "chorus/status.h"

namespace chorus {
namespace torch {

const char* metric_mode_name(MetricMode mode) { return mode == MetricMode::kMin ? "min" : "max"; }

MetricMode parse_metric_mode(const std::string& text) {
  if (text == "min") return MetricMode::kMin;
  if (text == "max") return MetricMode::kMax;
  throw Error(Status::InvalidArgument("metric mode '" + text + "' is invalid; expected min or max"));
}

bool improves(MetricMode mode, double metric, double best, double min_delta) {
  // Comparisons with NaN are false: a NaN metric is never an improvement.
  return mode == MetricMode::kMin ? metric < best - min_delta : metric > best + min_delta;
}

double worst_metric(MetricMode mode) {
  const double inf = std::numeric_limits<double>::infinity();
  return mode == MetricMode::kMin ? inf : -inf;
}

}  // namespace torch
}  // namespace chorus
