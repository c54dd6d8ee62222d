// What the autotuner searches: the fusion threshold, the cycle time and the
// allreduce algorithm, each as a grid for BayesianSearch (autotune_search.h),
// and how a chosen setting travels from rank 0 to every rank.
//
// Grids (a setting the user set explicitly has its value only):
//   fusion threshold  1 MiB .. 128 MiB in half-octave steps (log scale)
//   cycle time        0 .. 10 ms in 0.5 ms steps
//   algorithm         one of the allreduce algorithms host memory's backend
//                     can switch between (Backend::allreduce_algorithms:
//                     "shm" or "mpi" on one host); fixed when it has one, or
//                     when the user chose the path (CHORUS_SHM_ALLREDUCE,
//                     CHORUS_SHM_ALLREDUCE_THRESHOLD or
//                     CHORUS_HIERARCHICAL_ALLREDUCE set)
// The settings in effect at init() are always a candidate (added to a grid
// if they are not on it), so the search starts from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autotune/autotune_search.h"
#include "base/config.h"

namespace chorus {

struct TuningSettings {
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0.0;
  // Index into the backend's allreduce algorithms (the same list on every
  // rank); 0 is the one in use at the start.
  int algorithm = 0;

  bool operator==(const TuningSettings& other) const {
    return fusion_threshold_bytes == other.fusion_threshold_bytes && cycle_time_ms == other.cycle_time_ms &&
           algorithm == other.algorithm;
  }
  bool operator!=(const TuningSettings& other) const { return !(*this == other); }
};

class TuningSpace {
 public:
  // `algorithms`: the allreduce algorithms host memory's backend can switch
  // between, the one in use first (Backend::allreduce_algorithms).
  TuningSpace(const Config& config, std::vector<std::string> algorithms);

  std::vector<SearchDimension> dimensions() const;
  // The settings in effect at init().
  SearchPoint start() const { return start_; }
  TuningSettings settings_at(const SearchPoint& point) const;
  bool tunes_fusion_threshold() const { return thresholds_.size() > 1; }
  bool tunes_cycle_time() const { return cycle_times_.size() > 1; }
  bool tunes_algorithm() const { return searched_algorithms_ > 1; }
  // The name of algorithm `index` ("shm").
  const std::string& algorithm_name(int index) const { return algorithms_.at(static_cast<size_t>(index)); }
  // "fusion threshold 8388608 bytes, cycle time 2.5 ms, algorithm shm".
  std::string describe(const TuningSettings& settings) const;

 private:
  std::vector<int64_t> thresholds_;
  std::vector<double> cycle_times_;
  std::vector<std::string> algorithms_;
  size_t searched_algorithms_ = 1;  // the first ones of algorithms_
  SearchPoint start_;
};

// The settings and the sample they belong to, as words that ride along the
// negotiation's OR allreduce (rank 0 writes them, the others write zeros,
// so every rank reads rank 0's bits exactly).
struct TuningMessage {
  static constexpr size_t kWords = 4;
  uint64_t generation = 0;  // 0: nothing published yet; changes with every new setting
  bool frozen = false;      // the search is over; these settings stay
  TuningSettings settings;

  std::vector<uint64_t> encode() const;
  static TuningMessage decode(const std::vector<uint64_t>& words);
};

}  // namespace chorus
