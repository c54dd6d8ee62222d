// The negotiation protocol beyond steady state: join, shutdown, stalls and
// corrupt messages.
#include <gtest/gtest.h>

#include "controller_cluster.h"

namespace chorus {
namespace {

using test::allreduces;
using test::at;
using test::Cluster;
using test::describe;
using test::make;
using test::quiet_config;
using test::Responses;

Request join_request() { return make("chorus.join", OpType::kJoin, {}); }
Request shutdown_request() { return make("", OpType::kShutdown, {}); }

// docs/CONVENTIONS.md's error for a collective that joined ranks did not submit.
std::string joined_error(const std::string& op, const std::string& name, const std::string& who) {
  return op + " '" + name + "' cannot run while " + who +
         " joined: a joined rank takes part only in allreduces (contributing zeros), barriers and timeline "
         "control; run it on every rank before join(), or after join() has returned";
}

TEST(ControllerLifecycleTest, JoinedRanksFailTheOthersDataCollectivesNamingThem) {
  Cluster cluster(4);
  cluster.cycle({{}, {}, {join_request()}});
  // Every collective but allreduce fails on the ranks that submitted it.
  const std::vector<Request> others = {make("g", OpType::kAllgather, {2, 3}), make("b", OpType::kBroadcast),
                                       make("a", OpType::kAlltoall), make("r", OpType::kReducescatter)};
  Responses out = cluster.cycle({others, others, {}, others});
  ASSERT_EQ(describe(out), (std::vector<std::string>{"error:g", "error:b", "error:a", "error:r"}));
  EXPECT_EQ(out[0].error_message, joined_error("allgather", "g", "rank 2 has"));
  EXPECT_EQ(out[1].error_message, joined_error("broadcast", "b", "rank 2 has"));
  EXPECT_EQ(out[2].error_message, joined_error("alltoall", "a", "rank 2 has"));
  EXPECT_EQ(out[3].error_message, joined_error("reducescatter", "r", "rank 2 has"));
  for (const Response& error : out) EXPECT_EQ(error.error_code, StatusCode::kPreconditionFailed) << error.name;

  // One that rank 0, which has not joined, did not ask for fails as well:
  // without rank 2 it could only fail.
  out = cluster.cycle({{}, {make("g2", OpType::kAllgather, {1})}, {}, {make("g2", OpType::kAllgather, {1})}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"error:g2"});
  EXPECT_EQ(out[0].error_message, joined_error("allgather", "g2", "rank 2 has"));
  // Every joined rank is named.
  EXPECT_TRUE(cluster.cycle({{join_request()}, {}, {}, {}}).empty());
  out = cluster.cycle({{}, {make("g3", OpType::kAllgather, {1})}, {}, {make("g3", OpType::kAllgather, {1})}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"error:g3"});
  EXPECT_EQ(out[0].error_message, joined_error("allgather", "g3", "ranks [0, 2] have"));

  // Once everyone has joined, every rank takes part again.
  out = cluster.cycle({{}, {join_request()}, {}, {join_request()}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"join:chorus.join"});
  EXPECT_TRUE(cluster.cycle({{others[0]}, {others[0]}, {others[0]}, {}}).empty());
  EXPECT_EQ(describe(cluster.cycle({{}, {}, {}, {others[0]}})), std::vector<std::string>{"allgather:g"});
}

TEST(ControllerLifecycleTest, ACollectiveAJoinedRankBlocksFailsAtItsFirstRequest) {
  Cluster cluster(3);
  cluster.cycle({{}, {join_request()}, {}});
  // Ranks that skipped different unnamed ops disagree on later names: each
  // one's collective fails in the cycle it arrives, without the other's.
  const Request mine = make("allgather.noname.1", OpType::kAllgather, {2});
  const Request theirs = make("allgather.noname.2", OpType::kAllgather, {2});
  Responses out = cluster.cycle({{mine}, {}, {theirs}});
  ASSERT_EQ(describe(out), (std::vector<std::string>{"error:allgather.noname.1", "error:allgather.noname.2"}));
  EXPECT_EQ(out[0].error_message, joined_error("allgather", "allgather.noname.1", "rank 1 has"));
  EXPECT_EQ(out[0].error_code, StatusCode::kPreconditionFailed);
  // One name asked for a cycle apart fails twice, once for each asker.
  out = cluster.cycle({{make("b", OpType::kBroadcast)}, {}, {}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"error:b"});
  out = cluster.cycle({{}, {}, {make("b", OpType::kBroadcast)}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"error:b"});
  // Asked for in one cycle by both, it fails once.
  out = cluster.cycle({{make("a", OpType::kAlltoall)}, {}, {make("a", OpType::kAlltoall)}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"error:a"});
  // An allreduce, which a joined rank takes part in, still waits for the
  // ranks that have not joined.
  EXPECT_TRUE(cluster.cycle({{make("r")}, {}, {}}).empty());
  EXPECT_EQ(describe(cluster.cycle({{}, {}, {make("r")}})), std::vector<std::string>{"allreduce:r"});
}

TEST(ControllerLifecycleTest, WhatAJoinedRankSubmittedBeforeJoiningRuns) {
  Cluster cluster(3);
  Responses out = cluster.cycle({{}, {}, {make("g", OpType::kAllgather, {1}), join_request()}});
  EXPECT_TRUE(out.empty());
  out = cluster.cycle({{make("g", OpType::kAllgather, {2})}, {make("g", OpType::kAllgather, {3})}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"allgather:g"});
  EXPECT_EQ(out[0].first_dims, (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(out[0].elements, 6);
}

TEST(ControllerLifecycleTest, CachedCollectivesFailWhileARankIsJoined) {
  Cluster cluster(3);
  const std::vector<Request> cached = {make("b", OpType::kBroadcast), make("g", OpType::kAllgather, {2})};
  ASSERT_EQ(cluster.all(cached).size(), 2u);
  ASSERT_EQ(cluster.at(0).cache().size(), 2u);
  // The joined rank evicts them, so the others' hits go to the coordinator
  // and fail there instead of waiting for it.
  Responses out = cluster.cycle({{}, {join_request()}, {}});
  EXPECT_TRUE(out.empty());
  out = cluster.cycle({cached, {}, cached});
  ASSERT_EQ(describe(out), (std::vector<std::string>{"error:b", "error:g"}));
  EXPECT_EQ(out[0].error_message, joined_error("broadcast", "b", "rank 1 has"));
  // In the same cycle as the join, too.
  out = cluster.cycle({{join_request()}, {}, {}});
  ASSERT_TRUE(out.empty());
  out = cluster.cycle({{}, {}, {join_request()}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"join:chorus.join"});
  ASSERT_EQ(cluster.all(cached).size(), 2u);
  out = cluster.cycle({cached, {join_request()}, cached});
  ASSERT_EQ(describe(out), (std::vector<std::string>{"error:b", "error:g"}));
}

TEST(ControllerLifecycleTest, BarriersAndTimelineControlGoOnWithoutAJoinedRank) {
  Cluster cluster(3);
  cluster.cycle({{}, {join_request()}, {}});
  Request start = make("chorus.timeline", OpType::kStartTimeline, {0});
  start.edit_control().timeline_path = "/tmp/trace.json";
  start.edit_control().mark_cycles = true;
  const std::vector<Request> both = {make("chorus.barrier.0", OpType::kBarrier, {0}), start};
  Responses out = cluster.cycle({both, {}, both});
  ASSERT_EQ(describe(out), (std::vector<std::string>{"barrier:chorus.barrier.0", "start_timeline:chorus.timeline"}));
  EXPECT_EQ(out[1].timeline_path(), "/tmp/trace.json");
  EXPECT_TRUE(out[1].mark_cycles());
  // Adding a process set still needs every rank.
  Request add = make("chorus.process_set.add.0", OpType::kAddProcessSet, {0});
  add.set_ranks = {0, 2};
  EXPECT_TRUE(cluster.cycle({{add}, {}, {add}}).empty());
}

TEST(ControllerLifecycleTest, AllreduceCompletesWhileARankIsJoined) {
  Cluster cluster(3);
  EXPECT_TRUE(cluster.cycle({{}, {}, {join_request()}}).empty());
  EXPECT_TRUE(cluster.at(2).joined());
  EXPECT_FALSE(cluster.at(0).joined());

  // The joined rank takes part in the allreduce (with zeros); the broadcast
  // cannot run without it and fails, naming it.
  Responses out = cluster.cycle({{make("x"), make("y", OpType::kBroadcast)},
                                 {make("y", OpType::kBroadcast), make("x")}});
  ASSERT_EQ(describe(out), (std::vector<std::string>{"error:y", "allreduce:x"}));
  EXPECT_EQ(out[1].elements, 4);
  EXPECT_EQ(out[0].error_message, joined_error("broadcast", "y", "rank 2 has"));
  EXPECT_TRUE(cluster.cycle({}).empty());

  // Join completes when the last ranks join; ties go to the highest rank.
  out = cluster.cycle({{join_request()}, {join_request()}, {}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"join:chorus.join"});
  EXPECT_EQ(out[0].last_joined_rank, 1);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(cluster.at(r).joined()) << r;
}

TEST(ControllerLifecycleTest, JoinCompletesAWaitingAllreduce) {
  Cluster cluster(2);
  EXPECT_TRUE(cluster.cycle({allreduces({"x"}), {}}).empty());
  Responses out = cluster.cycle({{}, {join_request()}});
  EXPECT_EQ(describe(out), std::vector<std::string>{"allreduce:x"});
  out = cluster.cycle({{join_request()}, {}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"join:chorus.join"});
  EXPECT_EQ(out[0].last_joined_rank, 0);
}

TEST(ControllerLifecycleTest, CachedAllreduceFiresWhileARankIsJoined) {
  Cluster cluster(3);
  cluster.all(allreduces({"x", "w"}));
  cluster.cycle({{}, {join_request()}, {}});
  const uint64_t slow = cluster.at(0).stats().slow_path_cycles;

  Responses out = cluster.cycle({allreduces({"x"}), {}, allreduces({"x"})});
  EXPECT_EQ(describe(out), std::vector<std::string>{"allreduce:x"});
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, slow);
  EXPECT_EQ(cluster.at(1).stats().cache_hits, 1u);  // the joined rank runs it too
  // Nothing fires just because the joined rank does not hold anything back.
  EXPECT_TRUE(cluster.cycle({}).empty());
  EXPECT_TRUE(cluster.cycle({allreduces({"w"}), {}, {}}).empty());

  // w was pending on rank 0 only: it fires as soon as rank 2 joins too.
  out = cluster.cycle({{}, {}, {join_request()}});
  EXPECT_EQ(describe(out), std::vector<std::string>{"allreduce:w"});
  out = cluster.cycle({{join_request()}, {}, {}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"join:chorus.join"});
  EXPECT_EQ(out[0].last_joined_rank, 0);
  EXPECT_TRUE(cluster.cycle({}).empty());

  // After the join, every rank must take part again.
  EXPECT_TRUE(cluster.cycle({allreduces({"x"}), allreduces({"x"}), {}}).empty());
  EXPECT_EQ(describe(cluster.cycle({{}, {}, allreduces({"x"})})),
            std::vector<std::string>{"allreduce:x"});
}

TEST(ControllerLifecycleTest, ShutdownNamesTheLowestRank) {
  Cluster cluster(3);
  Responses out = cluster.cycle({allreduces({"a"}), {shutdown_request()}, {shutdown_request()}});
  ASSERT_EQ(describe(out), std::vector<std::string>{"shutdown:"});
  EXPECT_EQ(out[0].shutdown_rank, 1);
  EXPECT_EQ(out[0].error_message, "Rank 1 shut down");
}

Config stall_config(double check, double shutdown) {
  Config config = quiet_config();
  config.stall_check_seconds = check;
  config.stall_shutdown_seconds = shutdown;
  return config;
}

TEST(ControllerLifecycleTest, StallWarningNamesMissingRanks) {
  Cluster cluster(3, stall_config(10, 0));
  cluster.cycle({allreduces({"x"}), {}, allreduces({"x"})}, at(0));
  cluster.cycle({}, at(5));
  EXPECT_EQ(cluster.at(0).next_deadline(), at(10));
  EXPECT_EQ(cluster.at(1).next_deadline(), std::nullopt);

  testing::internal::CaptureStderr();
  cluster.cycle({}, at(11));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("Stalled collectives: allreduce 'x' submitted by ranks [0, 2] but not by "
                     "ranks [1] for 11 s"),
            std::string::npos)
      << log;
  EXPECT_EQ(cluster.at(0).next_deadline(), at(21));

  EXPECT_EQ(describe(cluster.cycle({{}, allreduces({"x"}), {}}, at(12))),
            std::vector<std::string>{"allreduce:x"});
  EXPECT_EQ(cluster.at(0).next_deadline(), std::nullopt);
}

TEST(ControllerLifecycleTest, StalledCachedTensorIsInvalidatedAndNamed) {
  Cluster cluster(3, stall_config(10, 0));
  cluster.all(allreduces({"x"}), at(0));
  cluster.cycle({allreduces({"x"}), {}, allreduces({"x"})}, at(100));
  const uint64_t slow = cluster.at(0).stats().slow_path_cycles;
  EXPECT_EQ(cluster.at(0).next_deadline(), at(110));

  // Partially ready in the cache, the missing ranks are unknown: the
  // coordinator evicts the slot so that ranks 0 and 2 re-send it.
  testing::internal::CaptureStderr();
  EXPECT_TRUE(cluster.cycle({}, at(110.5)).empty());
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("Stalled"), std::string::npos);
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, slow + 1);
  EXPECT_EQ(cluster.at(1).cache().slot_of("x"), std::nullopt);
  ASSERT_TRUE(cluster.at(0).next_deadline().has_value());
  EXPECT_LE(*cluster.at(0).next_deadline(), at(110.5));  // a warning is due now

  testing::internal::CaptureStderr();
  EXPECT_TRUE(cluster.cycle({}, at(110.5)).empty());
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("Stalled collectives: allreduce 'x' submitted by ranks [0, 2] but not by "
                     "ranks [1] for 10.5 s"),
            std::string::npos)
      << log;

  EXPECT_EQ(describe(cluster.cycle({{}, allreduces({"x"}), {}}, at(111))),
            std::vector<std::string>{"allreduce:x"});
  EXPECT_TRUE(cluster.at(2).cache().slot_of("x").has_value());
}

TEST(ControllerLifecycleTest, StallShutdown) {
  Cluster cluster(3, stall_config(0, 20));
  cluster.cycle({allreduces({"x"}), allreduces({"x"}), {}}, at(0));
  EXPECT_TRUE(cluster.cycle({}, at(19)).empty());
  EXPECT_EQ(cluster.at(0).next_deadline(), at(20));
  Responses out = cluster.cycle({}, at(21));
  ASSERT_EQ(describe(out), std::vector<std::string>{"shutdown:"});
  EXPECT_EQ(out[0].shutdown_rank, -1);
  EXPECT_EQ(out[0].error_message,
            "Stopping after a stall of 21 s: allreduce 'x' is waiting for ranks [2]");
}

TEST(ControllerLifecycleTest, CorruptRequestsStopEveryRank) {
  Cluster cluster(3);
  cluster.world().set_gather_filter([](int rank, std::string* blob) {
    if (rank == 1) blob->resize(blob->size() - 3);
  });
  std::vector<Responses> out;
  auto status = cluster.try_cycle({allreduces({"x"}), allreduces({"x"}), allreduces({"x"})}, &out);
  ASSERT_EQ(status[0].code(), StatusCode::kInternal);
  EXPECT_EQ(status[0].message().rfind("corrupt negotiation message: ", 0), 0u)
      << status[0].message();
  EXPECT_NE(status[0].message().find("(from rank 1)"), std::string::npos) << status[0].message();
  // The others were already waiting for the response list: they are told to stop.
  for (int r = 1; r < 3; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r].to_string();
    ASSERT_EQ(describe(out[r]), std::vector<std::string>{"shutdown:"});
    EXPECT_EQ(out[r][0].error_message, status[0].message());
  }
}

TEST(ControllerLifecycleTest, NameInFlightIsRefused) {
  Cluster cluster(1);
  EXPECT_TRUE(cluster.at(0).stats().cycles == 0);
  std::vector<Responses> out;
  auto status = cluster.try_cycle({allreduces({"x", "x"})}, &out);
  EXPECT_EQ(status[0].message(), "A collective named 'x' is already in flight on rank 0");
}

}  // namespace
}  // namespace chorus
