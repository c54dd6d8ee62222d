#include "chorus/tune/rung_ranking.h"

#include <algorithm>
#include <limits>

#include "chorus/status.h"

namespace chorus {
namespace tune {

const char* objective_name(Objective objective) {
  return objective == Objective::kMaximize ? "maximize" : "minimize";
}

bool better(Objective objective, double a, double b) { return objective == Objective::kMaximize ? a > b : a < b; }

const char* job_kind_name(JobKind kind) {
  switch (kind) {
    case JobKind::kStart: return "start";
    case JobKind::kPromote: return "promote";
    case JobKind::kWait: return "wait";
    case JobKind::kDone: return "done";
    case JobKind::kRegroup: return "regroup";
  }
  return "?";
}

bool ranks_before(Objective objective, const RungEntry& a, const RungEntry& b) {
  if (a.failed != b.failed) return !a.failed;
  if (!a.failed) {
    if (better(objective, a.metric, b.metric)) return true;
    if (better(objective, b.metric, a.metric)) return false;
  }
  return a.trial < b.trial;
}

std::vector<RungEntry> ranked(Objective objective, std::vector<RungEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [objective](const RungEntry& a, const RungEntry& b) { return ranks_before(objective, a, b); });
  return entries;
}

int64_t int_pow(int64_t eta, int k) {
  int64_t v = 1;
  for (int i = 0; i < k; ++i) {
    if (v > std::numeric_limits<int64_t>::max() / eta)
      throw Error(Status::InvalidArgument(std::to_string(eta) + "^" + std::to_string(k) + " does not fit in 64 bits"));
    v *= eta;
  }
  return v;
}

int int_log(int64_t x, int64_t eta) {
  int k = 0;
  // Divide instead of multiplying: no overflow near int64's end.
  while (x >= eta) {
    x /= eta;
    ++k;
  }
  return k;
}

}  // namespace tune
}  // namespace chorus
