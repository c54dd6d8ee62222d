#include "chorus/tune/search_summary.h"

#include <algorithm>
#include <cstdio>

namespace chorus {
namespace tune {
namespace {

// 0: has a result, 1: failed, 2: neither (still running or never reported).
int result_class(const TrialRecord& t) {
  if (t.last_result() != nullptr) return 0;
  return t.state == TrialState::kFailed ? 1 : 2;
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::vector<const TrialRecord*> ranked_trials(const SearchLog& log) {
  std::vector<const TrialRecord*> order;
  for (const TrialRecord& t : log.trials()) order.push_back(&t);
  const Objective objective = log.header().objective;
  std::stable_sort(order.begin(), order.end(), [objective](const TrialRecord* a, const TrialRecord* b) {
    const int ca = result_class(*a), cb = result_class(*b);
    if (ca != cb) return ca < cb;
    if (ca != 0) return a->id < b->id;
    const RungRecord* ra = a->last_result();
    const RungRecord* rb = b->last_result();
    if (ra->budget != rb->budget) return ra->budget > rb->budget;
    if (better(objective, ra->metric, rb->metric)) return true;
    if (better(objective, rb->metric, ra->metric)) return false;
    return a->id < b->id;
  });
  return order;
}

const TrialRecord* best_trial(const SearchLog& log) {
  const auto order = ranked_trials(log);
  return !order.empty() && order.front()->last_result() != nullptr ? order.front() : nullptr;
}

std::string summary_table(const SearchLog& log, size_t max_rows) {
  std::vector<std::string> header = {"rank", "trial", std::string("metric (") + objective_name(log.header().objective) + ")",
                                     "budget", "used", "state", "group"};
  std::vector<std::string> params;
  if (!log.trials().empty())
    for (const auto& [name, value] : log.trials().front().config.values()) params.push_back(name);
  header.insert(header.end(), params.begin(), params.end());

  std::vector<std::vector<std::string>> rows;
  int64_t total_used = 0;
  for (const TrialRecord& t : log.trials()) total_used += t.budget_used();
  const auto order = ranked_trials(log);
  for (size_t i = 0; i < order.size() && (max_rows == 0 || i < max_rows); ++i) {
    const TrialRecord& t = *order[i];
    const RungRecord* r = t.last_result();
    std::vector<std::string> row = {std::to_string(i + 1), std::to_string(t.id), r ? fixed(r->metric) : "-",
                                    r ? std::to_string(r->budget) : "-", std::to_string(t.budget_used()),
                                    trial_state_name(t.state),
                                    t.rungs.empty() ? "-" : std::to_string(t.rungs.back().group)};
    for (const std::string& p : params) row.push_back(t.config.has(p) ? t.config.get(p).to_string() : "-");
    rows.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) l += "  ";
      l += cells[c] + std::string(width[c] - cells[c].size(), ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  if (max_rows != 0 && order.size() > max_rows)
    out += "(" + std::to_string(order.size() - max_rows) + " more trials in the state file)\n";
  out += std::to_string(log.trials().size()) + " trials, " + std::to_string(total_used) + " budget units used in all\n";
  return out;
}

}  // namespace tune
}  // namespace chorus
