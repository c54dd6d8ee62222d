// The ordering every scheduler ranks a rung's results by: the better metric
// first (per the objective), failures last, ties to the older trial (the
// lower id), so that the order, and every decision built on it, is total
// and repeatable.
#pragma once

#include <cstdint>
#include <vector>

#include "chorus/tune/scheduler.h"

namespace chorus {
namespace tune {

struct RungEntry {
  int64_t trial = -1;
  bool failed = false;
  double metric = 0;
};

// True when `a` ranks before `b`.
bool ranks_before(Objective objective, const RungEntry& a, const RungEntry& b);
// The entries sorted best first.
std::vector<RungEntry> ranked(Objective objective, std::vector<RungEntry> entries);

// Integer-exact powers and logarithms for budgets.
// eta^k; throws chorus::Error when it passes int64's range.
int64_t int_pow(int64_t eta, int k);
// The largest k with eta^k <= x (x >= 1, eta >= 2), with no floating point:
// log(243)/log(3) is 4.999999999999999 in doubles, and floor would give 4.
int int_log(int64_t x, int64_t eta);

}  // namespace tune
}  // namespace chorus
