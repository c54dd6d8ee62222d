#include "autotune/standard_knobs.h"

#include <cmath>

namespace chorus {
namespace {

constexpr int kThresholdLog2Min = 20;  // 1 MiB
constexpr int kThresholdLog2Max = 27;  // 128 MiB
constexpr double kCycleTimeStepMs = 0.5;
constexpr int kCycleTimeSteps = 20;  // up to 10 ms

}  // namespace

TuningKnob fusion_threshold_knob(const Config& config) {
  std::vector<double> grid;
  // Half-octave steps; llround keeps whole bytes (2^20.5 is not one).
  for (int half = 2 * kThresholdLog2Min; half <= 2 * kThresholdLog2Max; ++half) {
    grid.push_back(static_cast<double>(std::llround(std::pow(2.0, half / 2.0))));
  }
  return TuningKnob::numeric("fusion_threshold_bytes", "fusion threshold", "bytes", TuningKnob::Scale::kLog,
                             std::move(grid), static_cast<double>(config.fusion_threshold_bytes),
                             !config.was_set("CHORUS_FUSION_THRESHOLD"));
}

TuningKnob cycle_time_knob(const Config& config) {
  std::vector<double> grid;
  for (int step = 0; step <= kCycleTimeSteps; ++step) grid.push_back(step * kCycleTimeStepMs);
  return TuningKnob::numeric("cycle_time_ms", "cycle time", "ms", TuningKnob::Scale::kLinear, std::move(grid),
                             config.cycle_time_ms, !config.was_set("CHORUS_CYCLE_TIME_MS"));
}

TuningKnob algorithm_knob(const Config& config, std::vector<std::string> algorithms) {
  if (algorithms.empty()) algorithms = {"default"};
  // A path the user chose stays.
  const bool chosen = config.was_set("CHORUS_SHM_ALLREDUCE") || config.was_set("CHORUS_SHM_ALLREDUCE_THRESHOLD") ||
                      config.was_set("CHORUS_HIERARCHICAL_ALLREDUCE");
  return TuningKnob::categorical("algorithm", "algorithm", std::move(algorithms), 0, !chosen);
}

}  // namespace chorus
