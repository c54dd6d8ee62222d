#include "runtime/fusion_planner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace chorus {
namespace {

using Type = Response::Type;

// A float32 response of `elements` elements: 4 bytes each.
Response make(const std::string& name, int64_t elements, Type type = Type::kAllreduce) {
  Response r;
  r.type = type;
  r.name = name;
  r.elements = elements;
  return r;
}

// The plan as names, e.g. {{"a", "b"}, {"c"}}, so failures print readably.
std::vector<std::vector<std::string>> names(const std::vector<ExecutionUnit>& units) {
  std::vector<std::vector<std::string>> out;
  for (const auto& unit : units) {
    out.emplace_back();
    for (const auto& r : unit) out.back().push_back(r.name);
  }
  return out;
}

using Plan = std::vector<std::vector<std::string>>;

TEST(FusionPlannerTest, EmptyInput) { EXPECT_TRUE(plan_fusion({}, 1024).empty()); }

TEST(FusionPlannerTest, PacksUpToTheThresholdInclusive) {
  // 4 x 100 bytes with a 300-byte threshold: three fit exactly.
  const std::vector<Response> in = {make("a", 25), make("b", 25), make("c", 25), make("d", 25)};
  EXPECT_EQ(names(plan_fusion(in, 300)), (Plan{{"a", "b", "c"}, {"d"}}));
  EXPECT_EQ(names(plan_fusion(in, 299)), (Plan{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(names(plan_fusion(in, 1 << 20)), (Plan{{"a", "b", "c", "d"}}));
}

TEST(FusionPlannerTest, SizeUsesTheDtype) {
  std::vector<Response> in = {make("a", 100), make("b", 100)};
  in[0].dtype = in[1].dtype = DataType::kFloat64;  // 800 bytes each
  EXPECT_EQ(names(plan_fusion(in, 1000)), (Plan{{"a"}, {"b"}}));
  in[0].dtype = in[1].dtype = DataType::kFloat16;  // 200 bytes each
  EXPECT_EQ(names(plan_fusion(in, 400)), (Plan{{"a", "b"}}));
}

TEST(FusionPlannerTest, ZeroThresholdDisablesFusion) {
  const std::vector<Response> in = {make("a", 1), make("b", 1), make("c", 1)};
  EXPECT_EQ(names(plan_fusion(in, 0)), (Plan{{"a"}, {"b"}, {"c"}}));
}

TEST(FusionPlannerTest, BigTensorRunsAlone) {
  const std::vector<Response> in = {make("small1", 10), make("big", 1000), make("small2", 10),
                                    make("empty", 0)};
  // The small ones fuse around the big one; nothing joins the big one, not
  // even an empty tensor.
  EXPECT_EQ(names(plan_fusion(in, 100)), (Plan{{"small1", "small2", "empty"}, {"big"}}));
  EXPECT_EQ(names(plan_fusion({make("big", 1000), make("tiny", 0)}, 100)),
            (Plan{{"big"}, {"tiny"}}));
}

TEST(FusionPlannerTest, CompatibilityRules) {
  const Response base = make("base", 1);
  EXPECT_TRUE(fusable(base, make("other", 5)));

  Response r = make("x", 1);
  r.dtype = DataType::kFloat64;
  EXPECT_FALSE(fusable(base, r));
  r = make("x", 1);
  r.device = Device::cuda(0);
  EXPECT_FALSE(fusable(base, r));
  r = make("x", 1);
  r.reduce_op = ReduceOp::kAverage;
  EXPECT_FALSE(fusable(base, r));
  r = make("x", 1);
  r.prescale = 0.5;
  EXPECT_FALSE(fusable(base, r));
  r = make("x", 1);
  r.postscale = 0.25;
  EXPECT_FALSE(fusable(base, r));
  EXPECT_FALSE(fusable(base, make("x", 1, Type::kReducescatter)));

  Response cuda0 = make("a", 1), cuda1 = make("b", 1);
  cuda0.device = Device::cuda(0);
  cuda1.device = Device::cuda(1);
  EXPECT_FALSE(fusable(cuda0, cuda1));

  EXPECT_TRUE(fusable(make("a", 1, Type::kReducescatter), make("b", 1, Type::kReducescatter)));
  EXPECT_TRUE(fusable(make("a", 1, Type::kAllgather), make("b", 1, Type::kAllgather)));
  EXPECT_FALSE(fusable(make("a", 1, Type::kAllgather), make("b", 1, Type::kReducescatter)));
  for (Type t : {Type::kBroadcast, Type::kAlltoall, Type::kBarrier, Type::kJoin, Type::kError, Type::kShutdown,
                 Type::kStartTimeline, Type::kStopTimeline}) {
    EXPECT_FALSE(fusable(make("a", 1, t), make("b", 1, t))) << static_cast<int>(t);
  }
}

TEST(FusionPlannerTest, LooksAheadPastIncompatibleResponses) {
  std::vector<Response> in = {make("a", 1), make("g", 1, Type::kAllgather), make("b", 1),
                              make("rs1", 1, Type::kReducescatter), make("d", 1),
                              make("rs2", 1, Type::kReducescatter), make("e", 1)};
  in[4].dtype = DataType::kInt32;  // same size as float32 but a different dtype
  EXPECT_EQ(names(plan_fusion(in, 1024)),
            (Plan{{"a", "b", "e"}, {"g"}, {"rs1", "rs2"}, {"d"}}));
}

TEST(FusionPlannerTest, AllgathersFuseByTheirOutputSize) {
  // An allgather's elements are its gathered output's.
  std::vector<Response> in = {make("g1", 25, Type::kAllgather), make("r", 1, Type::kReducescatter),
                              make("g2", 25, Type::kAllgather), make("g3", 50, Type::kAllgather),
                              make("g4", 25, Type::kAllgather)};
  EXPECT_EQ(names(plan_fusion(in, 300)), (Plan{{"g1", "g2", "g4"}, {"r"}, {"g3"}}));
  in[2].dtype = DataType::kInt32;
  EXPECT_EQ(names(plan_fusion(in, 300)), (Plan{{"g1", "g3"}, {"r"}, {"g2"}, {"g4"}}));
}

TEST(FusionPlannerTest, OtherTypesAreTheirOwnUnit) {
  const std::vector<Response> in = {make("b1", 1, Type::kBroadcast), make("b2", 1, Type::kBroadcast),
                                    make("x", 1, Type::kError), make("y", 1, Type::kError),
                                    make("t1", 1, Type::kAlltoall), make("t2", 1, Type::kAlltoall),
                                    make("bar", 0, Type::kBarrier)};
  EXPECT_EQ(names(plan_fusion(in, 1 << 20)),
            (Plan{{"b1"}, {"b2"}, {"x"}, {"y"}, {"t1"}, {"t2"}, {"bar"}}));
}

TEST(FusionPlannerTest, NothingIsPulledAcrossATimelineStartOrStop) {
  // What follows a start or stop runs after it: a trace holds exactly the
  // collectives negotiated between the two.
  for (Type control : {Type::kStartTimeline, Type::kStopTimeline}) {
    const std::vector<Response> in = {make("a", 1), make("timeline", 0, control), make("b", 1),
                                      make("g1", 1, Type::kAllgather), make("c", 1)};
    EXPECT_EQ(names(plan_fusion(in, 1024)), (Plan{{"a"}, {"timeline"}, {"b", "c"}, {"g1"}}));
  }
}

TEST(FusionPlannerTest, NothingIsPulledAheadOfAShutdownOrJoin) {
  const std::vector<Response> with_shutdown = {make("a", 1), make("stop", 0, Type::kShutdown),
                                               make("b", 1)};
  EXPECT_EQ(names(plan_fusion(with_shutdown, 1024)), (Plan{{"a"}, {"stop"}, {"b"}}));
  const std::vector<Response> with_join = {make("a", 1), make("join", 0, Type::kJoin), make("b", 1),
                                           make("c", 1)};
  EXPECT_EQ(names(plan_fusion(with_join, 1024)), (Plan{{"a"}, {"join"}, {"b", "c"}}));
}

TEST(FusionPlannerTest, SkipsWhatDoesNotFitAndKeepsLooking) {
  // Greedy: "c" does not fit next to a+b, but the smaller "d" still does.
  const std::vector<Response> in = {make("a", 10), make("b", 10), make("c", 10), make("d", 5)};
  EXPECT_EQ(names(plan_fusion(in, 100)), (Plan{{"a", "b", "d"}, {"c"}}));
}

TEST(FusionPlannerTest, KeepsEveryResponseExactlyOnceAndIsDeterministic) {
  // A mixed list built from a fixed recipe; the plan must be a partition of
  // the input, keep relative order inside units, order units by their first
  // member, respect the threshold and come out identical every time.
  std::vector<Response> in;
  for (int i = 0; i < 200; ++i) {
    Response r = make("t" + std::to_string(i), (i * 37) % 50, i % 7 == 0 ? Type::kBroadcast
                                                              : i % 5 == 0 ? Type::kReducescatter
                                                                           : Type::kAllreduce);
    r.dtype = i % 3 == 0 ? DataType::kFloat16 : DataType::kFloat32;
    r.reduce_op = i % 11 == 0 ? ReduceOp::kMax : ReduceOp::kSum;
    in.push_back(r);
  }
  const int64_t threshold = 256;
  const auto plan = plan_fusion(in, threshold);
  EXPECT_EQ(names(plan), names(plan_fusion(in, threshold)));

  std::vector<int> seen(in.size(), 0);
  size_t previous_first = 0;
  for (size_t u = 0; u < plan.size(); ++u) {
    const auto& unit = plan[u];
    ASSERT_FALSE(unit.empty());
    int64_t bytes = 0;
    size_t previous = 0;
    for (size_t k = 0; k < unit.size(); ++k) {
      const size_t index = std::stoul(unit[k].name.substr(1));
      ++seen[index];
      if (k > 0) {
        EXPECT_GT(index, previous);
        EXPECT_TRUE(fusable(unit[0], unit[k]));
      }
      previous = index;
      bytes += unit[k].elements * static_cast<int64_t>(dtype_size(unit[k].dtype));
    }
    if (unit.size() > 1) {
      EXPECT_LE(bytes, threshold);
    }
    const size_t first = std::stoul(unit[0].name.substr(1));
    if (u > 0) {
      EXPECT_GT(first, previous_first);
    }
    previous_first = first;
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "t" << i;
  EXPECT_LT(plan.size(), in.size());  // something did fuse
}

TEST(FusionPlannerTest, CarriesResponsesThroughUnchanged) {
  Response r = make("a", 3);
  r.first_dims = {1, 2};
  r.group = "g";
  r.postscale = 0.5;
  const auto plan = plan_fusion({r}, 1024);
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].size(), 1u);
  EXPECT_EQ(plan[0][0].first_dims, r.first_dims);
  EXPECT_EQ(plan[0][0].group, "g");
  EXPECT_EQ(plan[0][0].postscale, 0.5);
}

}  // namespace
}  // namespace chorus
