// The search as a figure: the metric against the budget, one line per trial
// through the rungs it finished, so a promotion is a line segment on to a
// larger budget and a stopped trial's line ends early; the best trial is
// drawn thick. Made like the benchmark plots (test/bench/report/
// report_plots.py): a data file and a gnuplot script beside the PNG (kept,
// so the figure can be redrawn), drawn by running gnuplot.
#pragma once

#include <string>

#include "chorus/status.h"
#include "chorus/tune/search_log.h"

namespace chorus {
namespace tune {

// Writes <stem>.dat and <stem>.gp (stem: png_path without ".png") and runs
// gnuplot on them. Fails with a Status saying what to do when gnuplot is
// not installed, when gnuplot fails (its output included), or when no trial
// has a result yet.
Status write_search_plot(const SearchLog& log, const std::string& png_path, const std::string& title = "");

}  // namespace tune
}  // namespace chorus
