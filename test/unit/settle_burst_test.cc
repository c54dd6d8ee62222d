// settle_burst: how long the background thread lets a burst of enqueues grow
// before it starts a cycle. The checks count calls where they can; only the
// waits without a blocked caller are timed, and only from below.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "protocol/cycle_trigger.h"

namespace chorus {
namespace {

using std::chrono::microseconds;
using std::chrono::steady_clock;

TEST(SettleBurstTest, EndsAtOnceWhenACallerAlreadyWaits) {
  int looks = 0;
  uint64_t arrivals = 0;
  // A burst that never stops growing would hold the settle for `longest`.
  const LocalWork work{[] { return true; },
                       [&] {
                         ++looks;
                         return ++arrivals;
                       },
                       [] { return true; }};
  settle_burst(work, microseconds(1000000), microseconds(1000000));
  EXPECT_EQ(looks, 1);  // the first look at the count, no polling after it
}

TEST(SettleBurstTest, WaitsWhileTheBurstGrowsUntilItsProducerBlocks) {
  uint64_t arrivals = 0;
  bool producer_blocked = false;
  const LocalWork work{[] { return true; },
                       [&] {
                         // The producer enqueues 50 tensors, then waits.
                         if (arrivals < 50) ++arrivals;
                         producer_blocked = arrivals == 50;
                         return arrivals;
                       },
                       [&] { return producer_blocked; }};
  settle_burst(work, microseconds(1000000), microseconds(10000000));
  EXPECT_EQ(arrivals, 50u);  // it saw the whole burst, then stopped without waiting out `quiet`
}

TEST(SettleBurstTest, WithoutAWaiterEndsAfterQuietOrLongest) {
  // Nothing arrives: ends after `quiet`.
  uint64_t arrivals = 7;
  const LocalWork quiet_work{[] { return true; }, [&] { return arrivals; }, [] { return false; }};
  auto start = steady_clock::now();
  settle_burst(quiet_work, microseconds(2000), microseconds(10000000));
  EXPECT_GE(steady_clock::now() - start, microseconds(2000));

  // A burst that keeps growing: ends after `longest`.
  const LocalWork growing{[] { return true; }, [&] { return ++arrivals; }, [] { return false; }};
  start = steady_clock::now();
  settle_burst(growing, microseconds(1000000), microseconds(3000));
  const auto took = steady_clock::now() - start;
  EXPECT_GE(took, microseconds(3000));
  EXPECT_LT(took, microseconds(1000000));  // not `quiet`: it never was quiet
}

}  // namespace
}  // namespace chorus
