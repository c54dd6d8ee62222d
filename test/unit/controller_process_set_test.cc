// The negotiation of process-set control requests (N controllers over the
// fake transport): a request one rank rejected fails on every rank, naming
// that rank, and takes no set id; a set one member fails refuses its work
// from then on, on every rank, while other sets go on, and can be removed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "controller_cluster.h"

namespace chorus {
namespace {

using test::Cluster;
using test::describe;
using test::make;
using test::Responses;

Request add(const std::string& name, std::vector<int64_t> ranks) {
  Request q = make(name, OpType::kAddProcessSet, {0});
  q.set_ranks = std::move(ranks);
  return q;
}

Request on_set(const std::string& name, int32_t set) {
  Request q = make(name);
  q.process_set = set;
  return q;
}

Request fail(const std::string& name, int32_t set, const std::string& reason) {
  Request q = make(name, OpType::kFailProcessSet, {0});
  q.set_id = set;
  q.edit_control().error = reason;
  return q;
}

TEST(ControllerProcessSetTest, ARequestOneRankRejectedFailsOnEveryRankNamingIt) {
  Cluster cluster(3);
  Request rejected = add("chorus.process_set.add.0", {});
  rejected.edit_control().error = "add_process_set got rank 0 twice in [0, 0]; expected each rank at most once";
  const Request good = add("chorus.process_set.add.0", {0, 1});
  Responses out = cluster.cycle({{good}, {rejected}, {good}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kError);
  EXPECT_EQ(out[0].error_code, StatusCode::kInvalidArgument);
  EXPECT_EQ(out[0].error_message,
            "add_process_set 'chorus.process_set.add.0' was rejected on rank 1: add_process_set got rank 0 twice "
            "in [0, 0]; expected each rank at most once");
  // Two ranks rejecting: the lowest speaks, the other is named.
  Request other = rejected;
  other.edit_control().error = "add_process_set got an empty rank list; expected at least one rank in [0, 3)";
  other.name = rejected.name = "chorus.process_set.add.1";
  const Request good1 = add("chorus.process_set.add.1", {0, 1});
  out = cluster.cycle({{good1}, {other}, {rejected}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].error_message,
            "add_process_set 'chorus.process_set.add.1' was rejected on rank 1: add_process_set got an empty rank "
            "list; expected at least one rank in [0, 3) (rank(s) [2] rejected their arguments too)");
  // The rejected adds took no id.
  out = cluster.all({add("chorus.process_set.add.2", {0, 2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kAddProcessSet);
  EXPECT_EQ(out[0].set_id, 1);
}

TEST(ControllerProcessSetTest, AFailedSetRefusesItsWorkWhileOthersGoOn) {
  Cluster cluster(3);
  ASSERT_EQ(cluster.all({add("add.a", {0, 1})}).at(0).set_id, 1);
  ASSERT_EQ(cluster.all({add("add.b", {1, 2})}).at(0).set_id, 2);
  // A response of set 1 in the cache (the second round takes the fast path).
  const Request cached = on_set("c", 1);
  EXPECT_EQ(describe(cluster.cycle({{cached}, {cached}, {}})), std::vector<std::string>{"allreduce:c"});
  EXPECT_EQ(describe(cluster.cycle({{cached}, {cached}, {}})), std::vector<std::string>{"allreduce:c"});
  EXPECT_EQ(cluster.at(2).cache().slots_of_set(1).size(), 1u);
  // Rank 0 waits in set 1 for rank 1 (in the coordinator's table); then
  // rank 1 fails the set, needing nobody else.
  EXPECT_TRUE(cluster.cycle({{on_set("x", 1)}, {}, {}}).empty());
  Responses out = cluster.cycle({{}, {fail("chorus.process_set.fail.1.0", 1, "gave up")}, {}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kFailProcessSet);
  EXPECT_EQ(out[0].set_id, 1);
  EXPECT_EQ(out[0].failing_rank(), 1);
  EXPECT_EQ(out[0].error_message, "gave up");
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(cluster.at(r).cache().slots_of_set(1).empty()) << "rank " << r;
    ASSERT_NE(cluster.at(r).members(1), nullptr) << "the failed set is still there to be removed";
  }
  // Rank 0's waiting request is gone (its runtime fails it); rank 1's late
  // submission of it, and the once-cached name, are refused.
  out = cluster.cycle({{cached}, {on_set("x", 1)}, {}});
  ASSERT_EQ(out.size(), 2u);
  for (const Response& r : out) {
    EXPECT_EQ(r.type, Response::Type::kError);
    EXPECT_EQ(r.error_code, StatusCode::kAborted);
    EXPECT_EQ(r.process_set, 1);
  }
  EXPECT_EQ(out[0].error_message, "allreduce 'c' of process set 1: process set 1 [0, 1] failed on rank 1: gave up");
  EXPECT_EQ(out[1].error_message, "allreduce 'x' of process set 1: process set 1 [0, 1] failed on rank 1: gave up");
  // Set 2 (holding rank 1 too) and the global set go on.
  out = cluster.cycle({{make("g")}, {on_set("y", 2), make("g")}, {on_set("y", 2), make("g")}});
  EXPECT_EQ(describe(out), (std::vector<std::string>{"allreduce:y", "allreduce:g"}));
  // A second failure is answered (its handle completes) but changes nothing.
  out = cluster.cycle({{fail("chorus.process_set.fail.0.0", 1, "later")}, {}, {}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kFailProcessSet);
  out = cluster.cycle({{on_set("z", 1)}, {}, {}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].error_message, "allreduce 'z' of process set 1: process set 1 [0, 1] failed on rank 1: gave up");
  // The failed set is removed like any other; its name works on a new set.
  Request remove = make("remove.a", OpType::kRemoveProcessSet, {0});
  remove.set_id = 1;
  EXPECT_EQ(describe(cluster.all({remove})), std::vector<std::string>{"remove_process_set:remove.a"});
  out = cluster.all({add("add.c", {0, 1})});
  ASSERT_EQ(out.at(0).set_id, 3);
  EXPECT_EQ(describe(cluster.cycle({{on_set("x", 3)}, {on_set("x", 3)}, {}})), std::vector<std::string>{"allreduce:x"});
}

TEST(ControllerProcessSetTest, FailingASetThatIsGoneIsAnError) {
  Cluster cluster(2);
  Responses out = cluster.cycle({{fail("chorus.process_set.fail.0.0", 7, "x")}, {}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kError);
  EXPECT_EQ(out[0].error_code, StatusCode::kInvalidArgument);
  EXPECT_EQ(out[0].error_message,
            "fail_process_set: process set 7 does not exist (it was removed, or never added on this job)");
}

}  // namespace
}  // namespace chorus
