// Autotuner (CHORUS_AUTOTUNE=1): during the first steps of training, rank 0
// measures how many bytes the job reduces per second of wall time under the
// settings BayesianSearch proposes for the knobs the runtime hands it
// (autotune_knob.h: fusion threshold, cycle time, algorithm), then keeps the
// best one for the rest of the job.
//
// Steps. The runtime sees collectives, not training steps: a step ends when
// a tensor name that already ran since the last step boundary runs again (a
// training loop submits the same gradient names every step). A sample is at
// least `steps_per_sample` whole steps and `min_sample_ms` of wall time;
// its score is the bytes of the allreduces and reducescatters that ran over
// the wall time between the boundaries that enclose them. Steps before `warmup_steps` boundaries (at least the first,
// which has no start mark) are not measured, nor the step in which a new
// setting took effect.
//
// Agreement. Every rank must fuse and route the same collectives the same
// way, so a setting must change on every rank at the same cycle: rank 0's
// TuningMessage rides along every negotiation (Controller's coordinator
// words), and every rank applies a new one from the cycle whose negotiation
// carried it, rank 0 included (the runtime applies each knob's value,
// TuningSpace::apply). The cycle time only matters on rank 0 (the cycle
// clock), but is applied everywhere alike.
//
// Scores enter the search as logarithms (a machine that slows down by some
// factor shifts every log score alike: the drift the search separates). After
// the budget, rank 0 publishes the search's choice as frozen (the incumbent,
// or the start setting unless the incumbent is clearly, >= 3%, faster), logs it once
// (info level) and writes the last CSV row (autotune_log.h). Every rank logs
// each setting it applies at debug level: "autotune: cycle C applies
// generation G (sample S | frozen): <settings>".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "autotune/autotune_log.h"
#include "autotune/autotune_search.h"
#include "autotune/autotune_space.h"
#include "base/config.h"
#include "protocol/message.h"

namespace chorus {

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;

  // `knobs`: what to search, the same list on every rank (its length sizes
  // words()). Rank 0 opens CHORUS_AUTOTUNE_LOG here (an unwritable path is an
  // error naming it) and publishes the start setting.
  static Status create(const Config& config, std::vector<TuningKnob> knobs, int rank,
                       std::unique_ptr<Autotuner>* out);

  // The words this rank puts into the cycle's negotiation (zeros except on rank 0).
  std::vector<uint64_t> words() const;
  // The coordinator's words as negotiation `cycle` delivered them: the
  // settings to apply from this cycle on, when they are new.
  std::optional<TuningSettings> receive(const std::vector<uint64_t>& words, uint64_t cycle);
  // Rank 0, after the cycle's responses ran: measures and moves the search on.
  void observe(const std::vector<Response>& responses, Clock::time_point now);

  // The final setting is in effect on this rank.
  bool frozen() const { return applied_frozen_; }
  const TuningSpace& space() const { return space_; }

 private:
  Autotuner(const Config& config, std::vector<TuningKnob> knobs, int rank);
  void on_step_boundary(Clock::time_point now);
  void finish_sample(double bytes_per_second);
  void publish(const TuningSettings& settings, bool frozen);
  void freeze(const std::string& why);
  void log_row(size_t sample, const char* kind, const TuningSettings& settings, double score, bool best);

  int rank_;
  TuningSpace space_;
  int64_t warmup_steps_;
  int64_t steps_per_sample_;
  double min_sample_seconds_;
  std::unique_ptr<BayesianSearch> search_;  // rank 0
  AutotuneLog log_;                         // rank 0
  TuningMessage published_;                 // rank 0
  uint64_t applied_generation_ = 0;
  bool applied_frozen_ = false;

  // Rank 0's measurement.
  std::unordered_set<std::string> step_names_;  // names run since the last boundary
  int64_t boundaries_ = 0;
  bool window_open_ = false;
  Clock::time_point window_start_{};
  int64_t window_steps_ = 0;
  double window_bytes_ = 0.0;
};

}  // namespace chorus
