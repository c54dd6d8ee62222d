#include "autotune/autotune_space.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace chorus {
namespace {

constexpr int kThresholdLog2Min = 20;  // 1 MiB
constexpr int kThresholdLog2Max = 27;  // 128 MiB
constexpr double kCycleTimeStepMs = 0.5;
constexpr int kCycleTimeSteps = 20;    // up to 10 ms
constexpr uint64_t kFlagFrozen = 1;
constexpr int kAlgorithmShift = 8;  // the algorithm's index, above the flags

template <typename T>
int index_of(std::vector<T>* values, T value) {
  auto it = std::find(values->begin(), values->end(), value);
  if (it == values->end()) {
    values->push_back(value);
    std::sort(values->begin(), values->end());
    it = std::find(values->begin(), values->end(), value);
  }
  return static_cast<int>(it - values->begin());
}

// Coordinates in [0, 1] by position between the smallest and the largest value.
template <typename T, typename Scale>
std::vector<double> normalised(const std::vector<T>& values, Scale scale) {
  std::vector<double> out;
  const double lo = scale(values.front()), hi = scale(values.back());
  for (const T& v : values) out.push_back(hi > lo ? (scale(v) - lo) / (hi - lo) : 0.0);
  return out;
}

}  // namespace

std::string TuningSpace::describe(const TuningSettings& settings) const {
  std::ostringstream out;
  out << "fusion threshold " << settings.fusion_threshold_bytes << " bytes, cycle time " << settings.cycle_time_ms
      << " ms, algorithm " << algorithm_name(settings.algorithm);
  return out.str();
}

TuningSpace::TuningSpace(const Config& config, std::vector<std::string> algorithms)
    : algorithms_(std::move(algorithms)) {
  if (algorithms_.empty()) algorithms_ = {"default"};
  if (config.was_set("CHORUS_FUSION_THRESHOLD")) {
    thresholds_ = {config.fusion_threshold_bytes};
  } else {
    // Half-octave steps; llround keeps whole bytes (2^20.5 is not one).
    for (int half = 2 * kThresholdLog2Min; half <= 2 * kThresholdLog2Max; ++half) {
      thresholds_.push_back(std::llround(std::pow(2.0, half / 2.0)));
    }
  }
  if (config.was_set("CHORUS_CYCLE_TIME_MS")) {
    cycle_times_ = {config.cycle_time_ms};
  } else {
    for (int step = 0; step <= kCycleTimeSteps; ++step) cycle_times_.push_back(step * kCycleTimeStepMs);
  }
  // A path the user chose stays: an explicit setting is never tuned.
  const bool algorithm_fixed = config.was_set("CHORUS_SHM_ALLREDUCE") ||
                               config.was_set("CHORUS_SHM_ALLREDUCE_THRESHOLD") ||
                               config.was_set("CHORUS_HIERARCHICAL_ALLREDUCE");
  searched_algorithms_ = algorithm_fixed ? 1 : algorithms_.size();
  start_ = {index_of(&thresholds_, config.fusion_threshold_bytes), index_of(&cycle_times_, config.cycle_time_ms), 0};
}

std::vector<SearchDimension> TuningSpace::dimensions() const {
  std::vector<SearchDimension> dims;
  dims.push_back({"fusion_threshold_bytes",
                  normalised(thresholds_, [](int64_t v) { return std::log2(static_cast<double>(std::max<int64_t>(v, 1))); }),
                  false});
  dims.push_back({"cycle_time_ms", normalised(cycle_times_, [](double v) { return v; }), false});
  std::vector<double> algorithm_coordinates;
  for (size_t i = 0; i < searched_algorithms_; ++i) algorithm_coordinates.push_back(static_cast<double>(i));
  dims.push_back({"algorithm", algorithm_coordinates, true});
  return dims;
}

TuningSettings TuningSpace::settings_at(const SearchPoint& point) const {
  TuningSettings s;
  s.fusion_threshold_bytes = thresholds_.at(static_cast<size_t>(point.at(0)));
  s.cycle_time_ms = cycle_times_.at(static_cast<size_t>(point.at(1)));
  s.algorithm = static_cast<int>(std::min(static_cast<size_t>(point.at(2)), searched_algorithms_ - 1));
  return s;
}

std::vector<uint64_t> TuningMessage::encode() const {
  uint64_t cycle_bits = 0;
  static_assert(sizeof(cycle_bits) == sizeof(settings.cycle_time_ms), "a double is 64 bits");
  // The exact bits, so an explicit cycle time like 2.3 ms arrives unchanged.
  std::memcpy(&cycle_bits, &settings.cycle_time_ms, sizeof(cycle_bits));
  return {generation, static_cast<uint64_t>(settings.fusion_threshold_bytes), cycle_bits,
          (static_cast<uint64_t>(settings.algorithm) << kAlgorithmShift) | (frozen ? kFlagFrozen : 0)};
}

TuningMessage TuningMessage::decode(const std::vector<uint64_t>& words) {
  TuningMessage m;
  if (words.size() < kWords) return m;
  m.generation = words[0];
  m.settings.fusion_threshold_bytes = static_cast<int64_t>(words[1]);
  std::memcpy(&m.settings.cycle_time_ms, &words[2], sizeof(words[2]));
  m.settings.algorithm = static_cast<int>(words[3] >> kAlgorithmShift);
  m.frozen = (words[3] & kFlagFrozen) != 0;
  return m;
}

}  // namespace chorus
