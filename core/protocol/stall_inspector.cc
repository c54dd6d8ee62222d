#include "protocol/stall_inspector.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace chorus {
namespace {

using Seconds = std::chrono::duration<double>;

// Seconds rounded to a tenth, without a trailing ".0": "61", "0.5".
std::string format_seconds(Seconds d) {
  const double tenths = std::round(d.count() * 10.0);
  std::ostringstream out;
  if (std::fmod(tenths, 10.0) == 0.0) {
    out << static_cast<long long>(tenths / 10.0);
  } else {
    out << static_cast<long long>(tenths) / 10 << '.' << static_cast<long long>(tenths) % 10;
  }
  return out.str();
}

std::string rank_list(const std::set<int>& ranks) {
  std::ostringstream out;
  out << '[';
  bool first = true;
  for (int r : ranks) {
    out << (first ? "" : ", ") << r;
    first = false;
  }
  out << ']';
  return out.str();
}

}  // namespace

StallInspector::StallInspector(double check_seconds, double shutdown_seconds, int world_size)
    : check_period_(check_seconds), shutdown_after_(shutdown_seconds), world_size_(world_size) {}

void StallInspector::record_pending(const std::string& name, const std::set<int>& ready_ranks,
                                    Clock::time_point now, const std::string& op, const std::string& label,
                                    const std::vector<int>& members) {
  // A cached tensor that was re-sent through the coordinator keeps its start
  // time: the stall began when it first went partially ready.
  auto [it, inserted] = pending_.try_emplace(name, Pending{now, std::nullopt, op, {}, {}});
  (void)inserted;
  it->second.ready_ranks = ready_ranks;
  it->second.op = op;
  it->second.label = label.empty() ? "'" + name + "'" : label;
  it->second.members = members;
}

void StallInspector::record_partial_cached(const std::string& name, Clock::time_point now,
                                           const std::string& op, const std::string& label) {
  pending_.try_emplace(name, Pending{now, std::nullopt, op, label.empty() ? "'" + name + "'" : label, {}});
}

void StallInspector::forget(const std::string& name) { pending_.erase(name); }

Seconds StallInspector::invalidate_after() const {
  Seconds after{0.0};
  for (Seconds period : {check_period_, shutdown_after_}) {
    if (period.count() > 0 && (after.count() == 0 || period < after)) after = period;
  }
  return after;
}

std::vector<std::string> StallInspector::cached_to_invalidate(Clock::time_point now) const {
  std::vector<std::string> names;
  const Seconds after = invalidate_after();
  if (after.count() <= 0) return names;
  for (const auto& [name, p] : pending_) {
    if (!p.ready_ranks && now - p.since >= after) names.push_back(name);
  }
  return names;
}

std::string StallInspector::missing_ranks(const Pending& p) const {
  std::set<int> missing;
  if (p.members.empty()) {
    for (int r = 0; r < world_size_; ++r) {
      if (!p.ready_ranks->count(r)) missing.insert(r);
    }
  } else {
    for (int r : p.members) {
      if (!p.ready_ranks->count(r)) missing.insert(r);
    }
  }
  return rank_list(missing);
}

std::string StallInspector::describe(const std::string& name, const Pending& p,
                                     Clock::time_point now) const {
  (void)name;  // the key; messages use the label
  return p.op + " " + p.label + " submitted by ranks " + rank_list(*p.ready_ranks) +
         " but not by ranks " + missing_ranks(p) + " for " + format_seconds(now - p.since) + " s";
}

std::optional<std::string> StallInspector::check(Clock::time_point now) {
  if (check_period_.count() <= 0) return std::nullopt;
  if (last_warning_ && now - *last_warning_ < check_period_) return std::nullopt;
  std::string message;
  for (const auto& [name, p] : pending_) {
    // Tensors whose ranks are unknown are about to be re-sent through the
    // coordinator (cached_to_invalidate); the next warning names their ranks.
    if (!p.ready_ranks || now - p.since < check_period_) continue;
    message += (message.empty() ? "Stalled collectives: " : "; ") + describe(name, p, now);
  }
  if (message.empty()) return std::nullopt;
  last_warning_ = now;
  return message;
}

std::optional<std::string> StallInspector::shutdown_reason(Clock::time_point now) const {
  if (shutdown_after_.count() <= 0) return std::nullopt;
  std::string clauses;
  Seconds longest{0.0};
  for (const auto& [name, p] : pending_) {
    if (!p.ready_ranks || now - p.since < shutdown_after_) continue;
    longest = std::max<Seconds>(longest, now - p.since);
    clauses += (clauses.empty() ? "" : "; ") + p.op + " " + p.label + " is waiting for ranks " +
               missing_ranks(p);
  }
  if (clauses.empty()) return std::nullopt;
  return "Stopping after a stall of " + format_seconds(longest) + " s: " + clauses;
}

std::optional<StallInspector::Clock::time_point> StallInspector::next_deadline() const {
  std::optional<Clock::time_point> deadline;
  auto consider = [&deadline](Clock::time_point t) {
    if (!deadline || t < *deadline) deadline = t;
  };
  auto after = [](Clock::time_point t, Seconds d) {
    return t + std::chrono::duration_cast<Clock::duration>(d);
  };
  const Seconds invalidate = invalidate_after();
  for (const auto& [name, p] : pending_) {
    if (!p.ready_ranks) {
      if (invalidate.count() > 0) consider(after(p.since, invalidate));
      continue;
    }
    if (check_period_.count() > 0) {
      // A warning was given less than a period ago: the next one waits.
      Clock::time_point t = after(p.since, check_period_);
      if (last_warning_) t = std::max(t, after(*last_warning_, check_period_));
      consider(t);
    }
    if (shutdown_after_.count() > 0) consider(after(p.since, shutdown_after_));
  }
  return deadline;
}

}  // namespace chorus
