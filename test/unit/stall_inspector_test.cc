#include "protocol/stall_inspector.h"

#include <gtest/gtest.h>

namespace chorus {
namespace {

using Clock = StallInspector::Clock;
const Clock::time_point kT0 = Clock::time_point{} + std::chrono::hours(10);
Clock::time_point at(double seconds) {
  return kT0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

TEST(StallInspectorTest, WarnsOncePerPeriodNamingMissingRanks) {
  StallInspector inspector(10, 0, 3);
  inspector.record_pending("x", {0, 2}, at(0), "allreduce");
  EXPECT_EQ(inspector.check(at(9.9)), std::nullopt);
  EXPECT_EQ(inspector.check(at(10)),
            "Stalled collectives: allreduce 'x' submitted by ranks [0, 2] but not by ranks [1] for 10 s");
  inspector.record_pending("x", {0, 2}, at(12), "allreduce");  // still pending: keeps its start
  EXPECT_EQ(inspector.check(at(15)), std::nullopt);             // warned less than a period ago
  EXPECT_EQ(inspector.check(at(20.5)),
            "Stalled collectives: allreduce 'x' submitted by ranks [0, 2] but not by ranks [1] for 20.5 s");
}

TEST(StallInspectorTest, SeveralTensorsAreSeparatedBySemicolons) {
  StallInspector inspector(5, 0, 4);
  inspector.record_pending("b", {1}, at(0), "broadcast");
  inspector.record_pending("a", {0, 1, 2}, at(2), "allgather");
  inspector.record_pending("young", {0}, at(4), "allreduce");
  EXPECT_EQ(inspector.check(at(7)),
            "Stalled collectives: allgather 'a' submitted by ranks [0, 1, 2] but not by ranks [3] "
            "for 5 s; broadcast 'b' submitted by ranks [1] but not by ranks [0, 2, 3] for 7 s");
}

TEST(StallInspectorTest, ForgottenTensorsAreNotReported) {
  StallInspector inspector(1, 2, 2);
  inspector.record_pending("x", {0}, at(0), "allreduce");
  inspector.forget("x");
  EXPECT_EQ(inspector.check(at(5)), std::nullopt);
  EXPECT_EQ(inspector.shutdown_reason(at(5)), std::nullopt);
  EXPECT_EQ(inspector.next_deadline(), std::nullopt);
  // A tensor that comes back starts a new clock.
  inspector.record_pending("x", {0}, at(10), "allreduce");
  EXPECT_EQ(inspector.check(at(10.5)), std::nullopt);
}

TEST(StallInspectorTest, CachedTensorsAreInvalidatedThenNamed) {
  StallInspector inspector(10, 0, 2);
  inspector.record_partial_cached("c", at(0), "allreduce");
  EXPECT_TRUE(inspector.cached_to_invalidate(at(9)).empty());
  EXPECT_EQ(inspector.cached_to_invalidate(at(10)), std::vector<std::string>{"c"});
  // Its ranks are unknown: no warning yet, and the warning period is not used up.
  EXPECT_EQ(inspector.check(at(10)), std::nullopt);
  // Re-sent through the coordinator, it keeps the time it has been stalled.
  inspector.record_pending("c", {1}, at(10), "allreduce");
  EXPECT_TRUE(inspector.cached_to_invalidate(at(10)).empty());
  EXPECT_EQ(inspector.check(at(10)),
            "Stalled collectives: allreduce 'c' submitted by ranks [1] but not by ranks [0] for 10 s");
}

TEST(StallInspectorTest, ShutdownReason) {
  StallInspector inspector(0, 30, 3);  // no warnings, but stop after 30 s
  inspector.record_pending("x", {0, 1}, at(0), "allreduce");
  inspector.record_pending("y", {2}, at(5), "barrier");
  EXPECT_EQ(inspector.check(at(100)), std::nullopt);
  EXPECT_EQ(inspector.shutdown_reason(at(29)), std::nullopt);
  EXPECT_EQ(inspector.shutdown_reason(at(30)),
            "Stopping after a stall of 30 s: allreduce 'x' is waiting for ranks [2]");
  EXPECT_EQ(inspector.shutdown_reason(at(40)),
            "Stopping after a stall of 40 s: allreduce 'x' is waiting for ranks [2]; barrier 'y' "
            "is waiting for ranks [0, 1]");
  // With warnings off, cached tensors are invalidated at the shutdown limit.
  inspector.record_partial_cached("c", at(0), "allreduce");
  EXPECT_EQ(inspector.cached_to_invalidate(at(30)), std::vector<std::string>{"c"});
}

TEST(StallInspectorTest, DisabledDoesNothing) {
  StallInspector inspector(0, 0, 2);
  inspector.record_pending("x", {0}, at(0), "allreduce");
  inspector.record_partial_cached("c", at(0), "allreduce");
  EXPECT_EQ(inspector.check(at(1e6)), std::nullopt);
  EXPECT_EQ(inspector.shutdown_reason(at(1e6)), std::nullopt);
  EXPECT_TRUE(inspector.cached_to_invalidate(at(1e6)).empty());
  EXPECT_EQ(inspector.next_deadline(), std::nullopt);
}

TEST(StallInspectorTest, NextDeadline) {
  StallInspector inspector(10, 25, 2);
  EXPECT_EQ(inspector.next_deadline(), std::nullopt);
  inspector.record_pending("x", {0}, at(3), "allreduce");
  EXPECT_EQ(inspector.next_deadline(), at(13));
  ASSERT_TRUE(inspector.check(at(13)).has_value());
  EXPECT_EQ(inspector.next_deadline(), at(23));  // the next warning
  ASSERT_TRUE(inspector.check(at(23)).has_value());
  EXPECT_EQ(inspector.next_deadline(), at(28));  // the shutdown comes first
  inspector.record_partial_cached("c", at(20), "allreduce");
  EXPECT_EQ(inspector.next_deadline(), at(28));
  inspector.forget("x");
  EXPECT_EQ(inspector.next_deadline(), at(30));  // invalidation of c
}

}  // namespace
}  // namespace chorus
