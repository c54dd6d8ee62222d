// The timeline at run time: start_timeline() and stop_timeline() on every
// rank in the middle of a run. Rank 0's file must be the CHORUS_TIMELINE
// trace of exactly the collectives negotiated between the two calls (none
// from before the start or after the stop), with CYCLE_START markers when
// asked for; a second start writes a fresh file. Errors are the same on
// every rank: stopping when nothing is written, starting twice, an
// unwritable path, and ranks that disagree on the arguments. A timeline
// that CHORUS_TIMELINE started can be stopped and started again.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "support/chrome_trace.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::Status;
using chorus::StatusCode;

constexpr uint64_t kSeed = 0x7c0a;

std::multiset<std::string> spans_of(std::vector<std::string> names) {
  return std::multiset<std::string>(names.begin(), names.end());
}

// An allreduce (sum) whose result is checked.
void allreduce_checked(const std::string& name, int index) {
  const auto inputs = make_inputs(DataType::kFloat32, {5}, world_size(), index, kSeed);
  Buffer mine = inputs[static_cast<size_t>(world_rank())];
  chorus::AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  Handle handle = submit([&] { return chorus::allreduce_async(name, mine.tensor(), sum); });
  EXPECT_DONE(handle);
  EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kSum))) << name;
}

// What start_timeline() or stop_timeline() threw (OK when nothing).
Status start(const std::string& path, bool mark_cycles = false) {
  return thrown_by([&] { chorus::start_timeline(path, mark_cycles); });
}
Status stop() {
  return thrown_by([] { chorus::stop_timeline(); });
}

void expect_error(const Status& status, StatusCode code, const std::string& message) {
  EXPECT_EQ(status.code(), code) << status.message();
  EXPECT_EQ(status.message(), message);
}

const std::string kNotStarted =
    "stop_timeline(): no timeline is being written; start one with start_timeline() or CHORUS_TIMELINE";

std::string already(const std::string& asked, const std::string& open) {
  return "start_timeline('" + asked + "'): a timeline is already being written to '" + open +
         "' (by CHORUS_TIMELINE or an earlier start_timeline()); call stop_timeline() first";
}

class TimelineControl : public ChorusSuite {};

TEST_F(TimelineControl, TraceHoldsExactlyWhatRanBetweenStartAndStop) {
  const std::string path = temp_dir() + "/" + shared_token() + ".control.json";
  const std::string again = temp_dir() + "/" + shared_token() + ".control.again.json";
  // Before the start, twice: the second run is a response cache hit, like
  // the same name after the stop.
  allreduce_checked("tl.before", 1);
  allreduce_checked("tl.before", 2);

  ASSERT_TRUE(is_ok(start(path, /*mark_cycles=*/true)));
  // Submitted together: fused into one unit (the group's members surely, as
  // the last rank's submission completes all three at once).
  const int n = size();
  std::vector<std::vector<Buffer>> members;
  std::vector<Buffer> mine;
  for (int m = 0; m < 3; ++m) {
    members.push_back({});
    for (int r = 0; r < n; ++r) members.back().push_back(make_input(DataType::kInt32, {1 + r % 2, 2 + m}, r, 10 + m, kSeed));
    mine.push_back(members.back()[static_cast<size_t>(rank())]);
  }
  Handle group = submit([&] {
    return chorus::grouped_allgather_async("tl.group", {mine[0].tensor(), mine[1].tensor(), mine[2].tensor()});
  });
  const auto bcast_inputs = make_inputs(DataType::kFloat64, {3}, n, 20, kSeed);
  Buffer bcast = bcast_inputs[static_cast<size_t>(rank())];
  Handle broadcast = submit([&] { return chorus::broadcast_async("tl.during.bcast", bcast.tensor(), n - 1); });
  allreduce_checked("tl.during", 3);
  EXPECT_DONE(group);
  EXPECT_DONE(broadcast);
  ASSERT_TRUE(is_ok(stop()));

  allreduce_checked("tl.after", 4);
  allreduce_checked("tl.before", 5);
  // A second start writes a fresh file, here without cycle markers.
  ASSERT_TRUE(is_ok(start(again)));
  allreduce_checked("tl.again", 6);
  ASSERT_TRUE(is_ok(stop()));
  allreduce_checked("tl.after", 7);

  const std::vector<chorus::Tensor> gathered = group.test() && group.status().ok() ? group.outputs()
                                                                                   : std::vector<chorus::Tensor>{};
  ASSERT_EQ(gathered.size(), 3u);
  for (size_t m = 0; m < 3; ++m) EXPECT_TRUE(same_bytes(gathered[m], reference_allgather(members[m]))) << m;
  EXPECT_TRUE(same_bytes(bcast.tensor(), bcast_inputs[static_cast<size_t>(n - 1)]));

  test_barrier();
  if (rank() != 0) return;
  // Rank 0's files are complete: stop_timeline() returned on this rank.
  const std::string text = read_file(path);
  std::vector<double> markers;
  const Lanes lanes = parse_trace(text, &markers);
  std::set<std::string> names;
  for (const auto& [tensor, spans] : lanes) names.insert(tensor);
  EXPECT_EQ(names, (std::set<std::string>{"tl.group.0", "tl.group.1", "tl.group.2", "tl.during.bcast", "tl.during"}))
      << text;
  EXPECT_FALSE(markers.empty()) << "no CYCLE_START marker with mark_cycles:\n" << text;
  EXPECT_EQ(activities(lanes, "tl.during"),
            spans_of({"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES", "ALLREDUCE"}));
  EXPECT_EQ(activities(lanes, "tl.during.bcast"),
            spans_of({"NEGOTIATE_BROADCAST", "WAIT_FOR_OTHER_COLLECTIVES", "BROADCAST"}));
  // The group's members were gathered as one fused allgather.
  for (int m = 0; m < 3; ++m) {
    const std::string member = "tl.group." + std::to_string(m);
    const std::vector<std::string> order = {"NEGOTIATE_ALLGATHER", "WAIT_FOR_OTHER_COLLECTIVES",
                                            "MEMCPY_IN_FUSION_BUFFER", "ALLGATHER", "MEMCPY_OUT_FUSION_BUFFER"};
    EXPECT_EQ(activities(lanes, member), spans_of(order)) << member;
    std::vector<const Span*> spans;
    for (const std::string& activity : order) spans.push_back(the_span(lanes, member, activity));
    expect_in_order(member, spans, order);
    if (spans[3] != nullptr) {
      EXPECT_EQ(spans[3]->args, (json{{"fused_tensors", 3}})) << member;
    }
  }

  const std::string second = read_file(again);
  std::vector<double> no_markers;
  const Lanes again_lanes = parse_trace(second, &no_markers);
  std::set<std::string> again_names;
  for (const auto& [tensor, spans] : again_lanes) again_names.insert(tensor);
  EXPECT_EQ(again_names, (std::set<std::string>{"tl.again"})) << second;
  EXPECT_TRUE(no_markers.empty()) << "cycle markers without mark_cycles:\n" << second;
  if (::testing::Test::HasFailure()) std::fprintf(stderr, "the traces:\n%s\n%s\n", text.c_str(), second.c_str());
  std::remove(path.c_str());
  std::remove(again.c_str());
}

TEST_F(TimelineControl, ErrorsAreTheSameOnEveryRank) {
  const std::string path = temp_dir() + "/" + shared_token() + ".errors.json";
  const std::string other = temp_dir() + "/" + shared_token() + ".errors.other.json";
  expect_error(stop(), StatusCode::kPreconditionFailed, kNotStarted);

  ASSERT_TRUE(is_ok(start(path)));
  expect_error(start(other), StatusCode::kPreconditionFailed, already(other, path));
  EXPECT_TRUE(is_ok(stop()));
  expect_error(stop(), StatusCode::kPreconditionFailed, kNotStarted);

  const std::string unwritable = "/nonexistent-chorus-dir/" + shared_token() + "/trace.json";
  expect_error(start(unwritable), StatusCode::kInvalidArgument,
               "start_timeline (rank 0 writes the timeline): cannot open '" + unwritable +
                   "' for writing: No such file or directory");
  expect_error(stop(), StatusCode::kPreconditionFailed, kNotStarted);

  // Ranks that disagree: nothing starts anywhere.
  const bool odd = rank() % 2 == 1;
  expect_error(start(odd ? other : path), StatusCode::kMismatch,
               "Mismatched timeline path for start_timeline 'chorus.timeline': rank 0 has '" + path +
                   "', rank 1 has '" + other + "'");
  expect_error(start(path, odd), StatusCode::kMismatch,
               "Mismatched mark cycles for start_timeline 'chorus.timeline': rank 0 has false, rank 1 has true");
  expect_error(odd ? stop() : start(path), StatusCode::kMismatch,
               "Mismatched operation for start_timeline 'chorus.timeline': rank 0 has start_timeline, rank 1 has "
               "stop_timeline");
  expect_error(stop(), StatusCode::kPreconditionFailed, kNotStarted);
  expect_error(start(""), StatusCode::kInvalidArgument,
               "start_timeline(): the path is empty; expected the file that rank 0 writes the trace to");

  // The runtime goes on, and so can a timeline.
  allreduce_checked("tl.errors.after", 30);
  EXPECT_TRUE(is_ok(start(path)));
  EXPECT_TRUE(is_ok(stop()));
  test_barrier();
  if (rank() == 0) {
    EXPECT_TRUE(parse_trace(read_file(path)).empty()) << read_file(path);
    EXPECT_FALSE(file_exists(other)) << other;
    std::remove(path.c_str());
  }
}

// CHORUS_TIMELINE's timeline is the one start_timeline() finds running; it
// stops like one that start_timeline() started.
TEST(TimelineControlFromEnvironment, StopsAndStartsAgain) {
  const std::string env_path = temp_dir() + "/" + shared_token() + ".env.json";
  const std::string later = temp_dir() + "/" + shared_token() + ".env.later.json";
  ScopedEnv env("CHORUS_TIMELINE", env_path.c_str());
  ASSERT_TRUE(init_chorus());
  allreduce_checked("tl.env.first", 40);
  expect_error(start(later), StatusCode::kPreconditionFailed, already(later, env_path));
  ASSERT_TRUE(is_ok(stop()));
  allreduce_checked("tl.env.between", 41);
  ASSERT_TRUE(is_ok(start(later)));
  allreduce_checked("tl.env.later", 42);
  test_barrier();
  shutdown_chorus();  // closes the second file
  test_barrier();
  if (world_rank() != 0) return;
  const auto names_in = [](const std::string& path) {
    std::set<std::string> names;
    for (const auto& [tensor, spans] : parse_trace(read_file(path))) names.insert(tensor);
    return names;
  };
  EXPECT_EQ(names_in(env_path), (std::set<std::string>{"tl.env.first"}));
  EXPECT_EQ(names_in(later), (std::set<std::string>{"tl.env.later"}));
  std::remove(env_path.c_str());
  std::remove(later.c_str());
}

}  // namespace
}  // namespace chorus_test
