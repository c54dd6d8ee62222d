// TuningKnob: one setting the autotuner can search, described generically so
// that the search, the message to the other ranks, the log and the messages
// loop over a list of knobs instead of naming each setting. The runtime
// declares its knobs and how it applies each (runtime.cc, tuning_knobs());
// the autotuner knows nothing of what a knob does, which keeps core/autotune
// free of the runtime and of ops/. standard_knobs.h describes the standard
// ones.
//
// Values are numbers (double, which holds every byte count the config
// accepts exactly), or for a categorical knob the index of one of its labels:
// a setting is a list of numbers whatever the knobs are, and travels between
// ranks as their exact bits (autotune_space.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

// One knob's value as its apply callback sees it.
struct KnobValue {
  double number = 0.0;  // the value; for a categorical knob, its label's index
  std::string label;    // a categorical knob's label ("shm"); empty otherwise
};

struct TuningKnob {
  // How values map to the search's coordinates in [0, 1]: the search models
  // the score as smooth in these, so the scale is what makes neighbouring
  // candidates comparable.
  enum class Scale {
    kLinear,  // by value (times)
    kLog,     // by logarithm (sizes: 1 -> 2 MiB is a step like 64 -> 128 MiB)
    // Labels without order or distance (an algorithm): only equal or not.
    kCategorical,
  };
  using Apply = std::function<Status(const KnobValue&)>;

  // A numeric knob. `grid`: the candidates when `searched`; `initial`: the
  // value in effect at init(), always a candidate (added to the grid if it is
  // not on it, so the search starts from it). Not searched (the user set it):
  // `initial` is the only candidate.
  static TuningKnob numeric(std::string name, std::string description, std::string unit, Scale scale,
                            std::vector<double> grid, double initial, bool searched);
  // A categorical knob choosing among `labels`, label `initial` in effect at
  // init(). Not searched: that label is the only candidate.
  static TuningKnob categorical(std::string name, std::string description, std::vector<std::string> labels,
                                size_t initial, bool searched);
  // This knob, applied by `apply` (called with every new setting, on every rank).
  TuningKnob applied_by(Apply apply) &&;

  // More than one candidate.
  bool searched() const { return candidates.size() > 1; }
  KnobValue value_of(double number) const;
  // The value as the log and the messages show it: whole numbers as integers
  // ("67108864"), others with up to 10 significant digits, so a value as set
  // reads back as set ("2.3"), and a categorical knob's label ("shm").
  std::string format(double number) const;

  std::string name;         // the log's column and the search's dimension: "cycle_time_ms"
  std::string description;  // in messages, before the value: "cycle time"
  std::string unit;         // in messages, after the value: "ms"; may be empty
  Scale scale = Scale::kLinear;
  std::vector<double> candidates;   // ascending; a categorical knob's label indices
  std::vector<std::string> labels;  // a categorical knob's labels, all of them
  double initial = 0.0;             // in effect at init(); one of the candidates
  Apply apply;                      // unset: the knob cannot be applied
};

}  // namespace chorus
