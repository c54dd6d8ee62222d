// The table printed at the end of a search, best trial first, and the
// ranking behind it: trials that reached a larger budget first (a metric
// after 81 epochs and one after 1 are not comparable, and the trials that
// survived to the full budget are the candidates), then by the metric at
// the largest budget they finished (the objective decides which way), then
// failed trials, then trials with no result; ties to the lower id.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "chorus/tune/search_log.h"

namespace chorus {
namespace tune {

// The trials best first.
std::vector<const TrialRecord*> ranked_trials(const SearchLog& log);

// The best trial (the first of ranked_trials) or nullptr when none has a result.
const TrialRecord* best_trial(const SearchLog& log);

// A fixed-width table: rank, trial, metric, budget reached, budget used,
// state, group, and one column per hyperparameter; at most `max_rows` trials
// (0: all), and a last line with the total budget used.
std::string summary_table(const SearchLog& log, size_t max_rows = 0);

}  // namespace tune
}  // namespace chorus
