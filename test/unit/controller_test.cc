// The negotiation protocol end to end: N controllers, one thread per rank,
// talking through the in-memory fake transport.
#include "protocol/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "controller_cluster.h"

namespace chorus {
namespace {

using test::allreduces;
using test::Cluster;
using test::describe;
using test::make;
using test::quiet_config;
using test::Responses;

TEST(ControllerTest, SameNamesInDifferentOrdersGiveOneOrder) {
  for (int size : {2, 3, 4}) {
    Cluster cluster(size);
    std::vector<std::vector<Request>> requests;
    std::vector<std::string> names = {"a", "b", "c", "d", "e"};
    for (int r = 0; r < size; ++r) {
      std::rotate(names.begin(), names.begin() + 1, names.end());
      requests.push_back(allreduces(names));
    }
    Responses out = cluster.cycle(requests);
    ASSERT_EQ(out.size(), 5u) << "size " << size;
    EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, 1u);
    for (const auto& r : out) {
      EXPECT_EQ(r.type, Response::Type::kAllreduce);
      EXPECT_EQ(r.elements, 4);
    }
    // The same names in yet other orders, now from the cache.
    for (int r = 0; r < size; ++r) std::reverse(requests[r].begin(), requests[r].end());
    Responses again = cluster.cycle(requests);
    EXPECT_EQ(again.size(), 5u);
    EXPECT_EQ(cluster.at(size - 1).stats().slow_path_cycles, 1u);
  }
}

TEST(ControllerTest, SecondRoundTakesTheFastPath) {
  Cluster cluster(3);
  const auto names = allreduces({"w1", "w2", "w3", "w4"});
  cluster.all(names);
  const NegotiationStats before = cluster.at(1).stats();
  EXPECT_EQ(before.slow_path_cycles, 1u);
  EXPECT_EQ(before.cache_hits, 0u);
  Responses out = cluster.all(names);
  ASSERT_EQ(out.size(), 4u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(cluster.at(r).stats().slow_path_cycles, before.slow_path_cycles);
    EXPECT_EQ(cluster.at(r).stats().cache_hits, before.cache_hits + 4);
    EXPECT_EQ(cluster.at(r).stats().cycles, 2u);
    EXPECT_FALSE(cluster.at(r).needs_cycle());
  }
  // An idle cycle neither gathers nor fires anything.
  EXPECT_TRUE(cluster.all({}).empty());
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, before.slow_path_cycles);
}

// Hits give their names to their responses in the same cycle as a slow path:
// the slow path's new request is still found (and cached with this rank's
// request, so that it hits next time), and every name arrives intact.
TEST(ControllerTest, HitsAndNewRequestsInOneCycle) {
  Cluster cluster(3);
  cluster.all(allreduces({"model.layers.0.weight.grad", "model.layers.1.weight.grad"}));
  const std::vector<std::string> expected = {"allreduce:model.layers.0.weight.grad", "allreduce:model.layers.1.weight.grad",
                                         "allreduce:model.layers.2.weight.grad"};
  const auto three =
      allreduces({"model.layers.0.weight.grad", "model.layers.1.weight.grad", "model.layers.2.weight.grad"});
  EXPECT_EQ(describe(cluster.all(three)), expected);
  const NegotiationStats before = cluster.at(1).stats();
  EXPECT_EQ(describe(cluster.all(three)), expected);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(cluster.at(r).stats().slow_path_cycles, before.slow_path_cycles) << "rank " << r;
    EXPECT_EQ(cluster.at(r).stats().cache_hits, before.cache_hits + 3) << "rank " << r;
  }
}

TEST(ControllerTest, WaitsUntilEveryRankSubmits) {
  Cluster cluster(3);
  // Uncached: the coordinator's table holds the early requests.
  EXPECT_TRUE(cluster.cycle({allreduces({"x"}), {}, allreduces({"x"})}).empty());
  EXPECT_TRUE(cluster.cycle({}).empty());
  EXPECT_EQ(describe(cluster.cycle({{}, allreduces({"x"}), {}})),
            std::vector<std::string>{"allreduce:x"});
  // Cached: the bit vector holds them.
  const uint64_t slow = cluster.at(0).stats().slow_path_cycles;
  EXPECT_TRUE(cluster.cycle({{}, allreduces({"x"}), {}}).empty());
  EXPECT_TRUE(cluster.cycle({allreduces({"x"}), {}, {}}).empty());
  EXPECT_EQ(describe(cluster.cycle({{}, {}, allreduces({"x"})})),
            std::vector<std::string>{"allreduce:x"});
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, slow);
  EXPECT_EQ(cluster.at(2).stats().cache_hits, 1u);
}

TEST(ControllerTest, SmallCacheStaysCorrectOverManyRounds) {
  // Capacity 3 for 8 names: slots are evicted and reused constantly, some
  // ranks hit while others miss, and requests arrive over several cycles.
  Cluster cluster(4, quiet_config(3));
  std::mt19937 rng(7);
  std::vector<std::string> names = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (int round = 0; round < 60; ++round) {
    std::vector<std::vector<std::string>> todo(4, names);
    for (auto& t : todo) std::shuffle(t.begin(), t.end(), rng);
    std::map<std::string, int> done;
    for (int cycle = 0; cycle < 40; ++cycle) {
      std::vector<std::vector<Request>> requests(4);
      bool work_left = false;
      for (int r = 0; r < 4; ++r) {
        const size_t n = std::min<size_t>(todo[r].size(), rng() % 4);
        requests[r] = allreduces({todo[r].begin(), todo[r].begin() + n});
        todo[r].erase(todo[r].begin(), todo[r].begin() + n);
        work_left = work_left || !todo[r].empty() || cluster.at(r).needs_cycle();
      }
      for (const auto& response : cluster.cycle(requests)) {
        ASSERT_EQ(response.type, Response::Type::kAllreduce);
        ++done[response.name];
      }
      if (!work_left && done.size() == names.size()) break;
    }
    ASSERT_EQ(done.size(), names.size()) << "round " << round;
    for (const auto& [name, count] : done) EXPECT_EQ(count, 1) << name;
    ASSERT_LE(cluster.at(0).cache().size(), 3u);
  }
  EXPECT_GT(cluster.at(0).stats().cache_hits, 0u);
}

TEST(ControllerTest, ChangedShapeIsRenegotiated) {
  Cluster cluster(2);
  cluster.all({make("x", OpType::kAllreduce, {4})});
  Responses out = cluster.all({make("x", OpType::kAllreduce, {2, 8})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].elements, 16);
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, 2u);
  out = cluster.all({make("x", OpType::kAllreduce, {2, 8})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].elements, 16);
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, 2u);

  // Only one rank changes: the cached slot is evicted everywhere, the other
  // rank's hit is re-sent, and the coordinator sees the mismatch.
  out = cluster.cycle({{make("x", OpType::kAllreduce, {2, 8})}, {make("x", OpType::kAllreduce, {3})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kError);
  EXPECT_EQ(out[0].error_message,
            "Mismatched shape for allreduce 'x': rank 0 has [2, 8], rank 1 has [3]");
  EXPECT_EQ(cluster.at(0).cache().slot_of("x"), std::nullopt);
}

TEST(ControllerTest, AllgatherCarriesFirstDimensions) {
  Cluster cluster(3);
  Responses out = cluster.cycle({{make("g", OpType::kAllgather, {1, 5})},
                                 {make("g", OpType::kAllgather, {4, 5})},
                                 {make("g", OpType::kAllgather, {0, 5})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, Response::Type::kAllgather);
  EXPECT_EQ(out[0].first_dims, (std::vector<int64_t>{1, 4, 0}));
  // Same shapes again hit the cache; one rank's new row count renegotiates.
  const uint64_t slow = cluster.at(0).stats().slow_path_cycles;
  cluster.cycle({{make("g", OpType::kAllgather, {1, 5})},
                 {make("g", OpType::kAllgather, {4, 5})},
                 {make("g", OpType::kAllgather, {0, 5})}});
  EXPECT_EQ(cluster.at(0).stats().slow_path_cycles, slow);
  out = cluster.cycle({{make("g", OpType::kAllgather, {1, 5})},
                       {make("g", OpType::kAllgather, {2, 5})},
                       {make("g", OpType::kAllgather, {0, 5})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first_dims, (std::vector<int64_t>{1, 2, 0}));
}

TEST(ControllerTest, EveryMismatchIsReportedOnEveryRank) {
  struct Case {
    std::function<void(Request*)> change;  // applied to rank 2's request
    std::string message;
  };
  Request base = make("t", OpType::kBroadcast, {2, 3});
  base.root = 1;
  Request reduce = make("t", OpType::kAllreduce, {2, 3});
  Request timeline = make("t", OpType::kStartTimeline, {0});
  timeline.edit_control().timeline_path = "/tmp/a.json";
  const std::vector<std::pair<Request, Case>> cases = {
      {base, {[](Request* q) { q->op = OpType::kAllgather; },
              "Mismatched operation for broadcast 't': rank 0 has broadcast, rank 2 has allgather"}},
      {base, {[](Request* q) { q->dtype = DataType::kInt32; },
              "Mismatched dtype for broadcast 't': rank 0 has float32, rank 2 has int32"}},
      {base, {[](Request* q) { q->shape = {3, 2}; },
              "Mismatched shape for broadcast 't': rank 0 has [2, 3], rank 2 has [3, 2]"}},
      {base, {[](Request* q) { q->device = Device::cuda(2); },
              "Mismatched device for broadcast 't': rank 0 has cpu, rank 2 has cuda"}},
      {base, {[](Request* q) { q->root = 0; },
              "Mismatched root rank for broadcast 't': rank 0 has 1, rank 2 has 0"}},
      {reduce, {[](Request* q) { q->reduce_op = ReduceOp::kMax; },
                "Mismatched reduce op for allreduce 't': rank 0 has sum, rank 2 has max"}},
      {reduce, {[](Request* q) { q->prescale = 0.5; },
                "Mismatched prescale factor for allreduce 't': rank 0 has 1, rank 2 has 0.5"}},
      {reduce, {[](Request* q) { q->postscale = 0.25; },
                "Mismatched postscale factor for allreduce 't': rank 0 has 1, rank 2 has 0.25"}},
      {reduce, {[](Request* q) { q->group = "g", q->group_size = 1; },
                "Mismatched group for allreduce 't': rank 0 has no group, rank 2 has group 'g' of 1"}},
      {timeline, {[](Request* q) { q->edit_control().timeline_path = "/tmp/b.json"; },
                  "Mismatched timeline path for start_timeline 't': rank 0 has '/tmp/a.json', rank 2 has "
                  "'/tmp/b.json'"}},
      {timeline, {[](Request* q) { q->edit_control().mark_cycles = true; },
                  "Mismatched mark cycles for start_timeline 't': rank 0 has false, rank 2 has true"}},
      {timeline, {[](Request* q) { q->op = OpType::kStopTimeline; },
                  "Mismatched operation for start_timeline 't': rank 0 has start_timeline, rank 2 has "
                  "stop_timeline"}},
  };
  for (const auto& [request, c] : cases) {
    Cluster cluster(4);
    Request changed = request;
    c.change(&changed);
    Responses out = cluster.cycle({{request}, {request}, {changed}, {changed}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].type, Response::Type::kError);
    EXPECT_EQ(out[0].name, "t");
    EXPECT_EQ(out[0].error_message, c.message);
    // The failed name is no longer pending anywhere and was not cached.
    EXPECT_TRUE(cluster.all({}).empty());
    EXPECT_EQ(cluster.at(3).cache().size(), 0u);
  }
}

TEST(ControllerTest, IgnoredFieldsDoNotMismatch) {
  Cluster cluster(2);
  Request a = make("t", OpType::kAllreduce);
  Request b = a;
  b.root = 1;  // allreduce has no root
  b.device = Device::cpu();
  Request g0 = make("g", OpType::kAllgather, {1, 3});
  Request g1 = make("g", OpType::kAllgather, {7, 3});
  g1.reduce_op = ReduceOp::kMax;  // allgather does not reduce
  Responses out = cluster.cycle({{a, g0}, {b, g1}});
  EXPECT_EQ(describe(out), (std::vector<std::string>{"allreduce:t", "allgather:g"}));
}

TEST(ControllerTest, GroupMembersComeOutAdjacent) {
  Cluster cluster(3);
  auto member = [](const std::string& name) {
    Request q = make(name);
    q.group = "bucket";
    q.group_size = 3;
    return q;
  };
  const std::vector<Request> group = {member("g1"), member("g2"), member("g3")};
  std::vector<Request> late = {make("z")};
  late.insert(late.end(), group.begin(), group.end());
  late.push_back(make("y"));
  Responses out = cluster.cycle({{make("y"), make("z")}, allreduces({"y", "z"}), {}});
  EXPECT_TRUE(out.empty());
  out = cluster.cycle({group, group, late});
  EXPECT_EQ(describe(out), (std::vector<std::string>{"allreduce:z", "allreduce:g1", "allreduce:g2",
                                                     "allreduce:g3", "allreduce:y"}));
  EXPECT_EQ(out[1].group, "bucket");
}

TEST(ControllerTest, BarrierIsAnOrdinaryNamedRequest) {
  Cluster cluster(2);
  Request barrier = make("sync-1", OpType::kBarrier, {});
  EXPECT_TRUE(cluster.cycle({{barrier}, {}}).empty());
  EXPECT_EQ(describe(cluster.cycle({{}, {barrier}})), std::vector<std::string>{"barrier:sync-1"});
}

TEST(ControllerTest, CapacityZeroAlwaysTakesTheSlowPath) {
  Cluster cluster(2, quiet_config(0));
  for (int round = 0; round < 3; ++round) {
    // Names complete in the order the last rank (1) submitted them.
    EXPECT_EQ(describe(cluster.cycle({allreduces({"a", "b"}), allreduces({"b", "a"})})),
              (std::vector<std::string>{"allreduce:b", "allreduce:a"}));
  }
  EXPECT_EQ(cluster.at(1).stats().slow_path_cycles, 3u);
  EXPECT_EQ(cluster.at(1).stats().cache_hits, 0u);
  EXPECT_TRUE(cluster.all({}).empty());
  EXPECT_EQ(cluster.at(1).stats().slow_path_cycles, 3u);  // idle cycles stay cheap
}

}  // namespace
}  // namespace chorus
