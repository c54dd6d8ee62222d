// Whether a lower or a higher metric is better: for the best checkpoint
// (CheckpointManager) and early stopping (EarlyStopping).
#pragma once

#include <string>

namespace chorus {
namespace torch {

enum class MetricMode { kMin, kMax };

// "min", "max"; parse_metric_mode throws chorus::Error naming a bad value.
const char* metric_mode_name(MetricMode mode);
MetricMode parse_metric_mode(const std::string& text);

// Whether `metric` improves on `best` by more than min_delta (>= 0) in
// `mode`: metric < best - min_delta (kMin), metric > best + min_delta (kMax).
// NaN never improves. The worst value to start from: +inf (kMin), -inf (kMax).
bool improves(MetricMode mode, double metric, double best, double min_delta);
double worst_metric(MetricMode mode);

}  // namespace torch
}  // namespace chorus
