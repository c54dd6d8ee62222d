#include "chorus/tune/search_plot.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "chorus/tune/search_summary.h"

namespace chorus {
namespace tune {
namespace {

// A gnuplot string literal.
std::string gnuplot_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A shell word.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

std::string short_number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void write_block(std::string& data, const TrialRecord& t) {
  data += "# trial " + std::to_string(t.id) + " (" + trial_state_name(t.state) + "): " + t.config.to_string() + "\n";
  for (const RungRecord& r : t.rungs)
    if (r.finished && !r.failed) data += std::to_string(r.budget) + " " + number(r.metric) + "\n";
  data += "\n\n";  // gnuplot: two blank lines end a data set (an `index`)
}

}  // namespace

Status write_search_plot(const SearchLog& log, const std::string& png_path, const std::string& title) {
  const TrialRecord* best = best_trial(log);
  if (best == nullptr) return Status::PreconditionFailed("no trial has a result yet: nothing to plot in '" + png_path + "'");
  const std::string stem =
      png_path.size() > 4 && png_path.compare(png_path.size() - 4, 4, ".png") == 0 ? png_path.substr(0, png_path.size() - 4)
                                                                                   : png_path;
  const std::string data_path = stem + ".dat", script_path = stem + ".gp";

  std::string data = "# budget metric, one data set per trial with a result, the best trial last\n";
  int sets = 0, failed = 0;
  int64_t low = log.header().max_budget, high = 1;
  for (const TrialRecord& t : log.trials()) {
    if (t.state == TrialState::kFailed) ++failed;
    for (const RungRecord& r : t.rungs) low = std::min(low, r.budget), high = std::max(high, r.budget);
    if (t.last_result() == nullptr) continue;
    write_block(data, t);
    ++sets;
  }
  write_block(data, *best);

  const SearchHeader& h = log.header();
  const std::string heading = !title.empty() ? title
                              : h.scheduler + ": " + std::to_string(log.trials().size()) + " trials (" +
                                    std::to_string(failed) + " failed), best: trial " + std::to_string(best->id) +
                                    ", " + short_number(best->last_result()->metric);
  std::string script;
  script += "set terminal pngcairo noenhanced size 960,600 font \"sans,11\"\n";
  script += "set output " + gnuplot_quoted(png_path) + "\n";
  script += "set grid\nset key box opaque top left\n";
  script += "set title " + gnuplot_quoted(heading) + "\n";
  script += "set logscale x\nset xlabel \"budget (units)\"\n";
  // The budgets' own range, with a margin (gnuplot's would run to the next decade).
  script += "set xrange [" + number(static_cast<double>(low) / 1.25) + ":" + number(static_cast<double>(high) * 1.25) + "]\n";
  script += "set ylabel " + gnuplot_quoted(std::string("metric (") + objective_name(h.objective) + ")") + "\n";
  script += "plot for [i=0:" + std::to_string(sets - 1) + "] " + gnuplot_quoted(data_path) +
            " index i with linespoints lw 1 pt 7 ps 0.6 lc (i % 8 + 1) notitle, \\\n     " + gnuplot_quoted(data_path) +
            " index " + std::to_string(sets) + " with linespoints lw 3 pt 7 ps 1 lc rgb \"black\" title " +
            gnuplot_quoted("best: trial " + std::to_string(best->id) + " (" + best->config.to_string() + ")") + "\n";

  for (const auto& [path, text] : {std::make_pair(data_path, data), std::make_pair(script_path, script)}) {
    std::ofstream out(path);
    out << text;
    if (!out.flush()) return Status::Internal("writing '" + path + "' for the search plot failed");
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    return Status::PreconditionFailed("gnuplot is not installed, so '" + png_path + "' was not drawn (install gnuplot-nox: "
                                      "scripts/install_deps.sh; then run: gnuplot " + script_path + ")");
  FILE* pipe = ::popen(("gnuplot " + shell_quoted(script_path) + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return Status::Internal("starting gnuplot for '" + png_path + "' failed");
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) output += buf;
  const int rc = ::pclose(pipe);
  if (rc != 0) return Status::Internal("gnuplot " + script_path + " failed (status " + std::to_string(rc) + "): " + output);
  return Status::OK();
}

}  // namespace tune
}  // namespace chorus
