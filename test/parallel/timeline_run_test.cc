// The timeline of a real run: CHORUS_TIMELINE set on every rank, a few named
// collectives (fused small allreduces, an unfused large one, an allgather and
// a broadcast), then shutdown, after which rank 0's file must be a complete,
// valid Chrome trace with one lane per tensor and the expected spans on each.
// Also: only rank 0 opens the file, so the other ranks neither create a file
// at their path nor fail init() when it is unwritable.
//
// Not tested here: an unwritable CHORUS_TIMELINE on rank 0. Rank 0's init()
// then fails after the other ranks' init() has succeeded (the file is opened
// after communication is set up), and their shutdown() never returns: their
// background threads wait, without a timeout, for a cycle start from a
// coordinator that is gone. Such a test would hang the job.
#include <mpi.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/chrome_trace.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::Status;
using chorus::Tensor;

constexpr uint64_t kSeed = 0x7173;
constexpr int kSmallTensors = 4;
// Bytes: less than the large allreduce (kLargeElements float32s), so it
// always runs alone, and more than the small ones (a few hundred bytes
// together), so they always fit in one fusion unit.
constexpr const char* kFusionThreshold = "65536";
constexpr int64_t kLargeElements = int64_t{1} << 16;

std::string small_name(int i) { return "timeline.small." + std::to_string(i); }
const std::string kLarge = "timeline.large";
const std::string kGather = "timeline.gather";
const std::string kBroadcast = "timeline.bcast";

TEST(TimelineRun, RankZeroWritesACompleteTraceOfTheRun) {
  const std::string path = temp_dir() + "/" + shared_token() + ".timeline.json";
  ScopedEnv env({{"CHORUS_TIMELINE", path.c_str()}, {"CHORUS_FUSION_THRESHOLD", kFusionThreshold}});
  ASSERT_TRUE(init_chorus());
  const int rank = world_rank();
  const int size = world_size();
  chorus::AllreduceOptions sum;
  sum.op = ReduceOp::kSum;

  // Small allreduces, submitted so that they always fuse: the other ranks
  // submit them first; rank 0 submits all of them while its background
  // thread is held inside the allgather's output allocator, so they reach
  // its next negotiation cycle together and become ready at once.
  std::vector<std::vector<Buffer>> small_inputs;
  std::vector<Buffer> small(kSmallTensors);
  std::vector<Handle> small_handles(kSmallTensors);
  for (int i = 0; i < kSmallTensors; ++i) {
    small_inputs.push_back(make_inputs(DataType::kFloat32, {8 + i}, size, i, kSeed));
    small[static_cast<size_t>(i)] = small_inputs.back()[static_cast<size_t>(rank)];
  }
  auto submit_small = [&] {
    for (int i = 0; i < kSmallTensors; ++i) {
      const size_t k = static_cast<size_t>(i);
      small_handles[k] =
          submit([&] { return chorus::allreduce_async(small_name(i), small[k].tensor(), sum); });
    }
  };
  if (rank != 0) submit_small();
  test_barrier();

  // Ranks contribute different numbers of rows.
  std::vector<Buffer> gather_inputs;
  for (int r = 0; r < size; ++r) {
    gather_inputs.push_back(make_input(DataType::kInt32, {1 + r % 2, 3}, r, 10, kSeed));
  }
  Buffer gather_in = gather_inputs[static_cast<size_t>(rank)];
  Buffer gathered;
  std::atomic<bool> in_allocator{false};
  std::atomic<bool> released{false};
  chorus::OutputAllocator hold = [&](const Shape& shape, DataType dtype, chorus::Device device,
                                     Tensor* out) {
    in_allocator = true;
    const bool ok = eventually([&] { return released.load(); }, std::chrono::seconds(20));
    gathered = Buffer(dtype, shape);
    *out = Tensor(gathered.data(), dtype, shape, device);
    return ok ? Status::OK() : Status::Internal("test: the allocator was never released");
  };
  Handle gather = submit([&] {
    return chorus::allgather_async(kGather, gather_in.tensor(), rank == 0 ? hold : chorus::OutputAllocator());
  });
  if (rank == 0) {
    EXPECT_TRUE(eventually([&] { return in_allocator.load(); }, std::chrono::seconds(20)))
        << "the allgather's allocator never ran";
    submit_small();
    released = true;  // always, so the allocator (which uses this frame) returns
  }

  const auto large_inputs = make_inputs(DataType::kFloat32, {kLargeElements}, size, 20, kSeed);
  Buffer large = large_inputs[static_cast<size_t>(rank)];
  Handle large_handle = submit([&] { return chorus::allreduce_async(kLarge, large.tensor(), sum); });
  const int root = size - 1;
  const auto bcast_inputs = make_inputs(DataType::kFloat64, {5}, size, 30, kSeed);
  Buffer bcast = bcast_inputs[static_cast<size_t>(rank)];
  Handle bcast_handle = submit([&] { return chorus::broadcast_async(kBroadcast, bcast.tensor(), root); });

  EXPECT_DONE(gather);
  for (int i = 0; i < kSmallTensors; ++i) {
    const size_t k = static_cast<size_t>(i);
    EXPECT_DONE(small_handles[k]);
    EXPECT_TRUE(matches(small[k].tensor(), reference_reduce(small_inputs[k], ReduceOp::kSum)))
        << small_name(i);
  }
  EXPECT_DONE(large_handle);
  EXPECT_DONE(bcast_handle);
  EXPECT_TRUE(matches(large.tensor(), reference_reduce(large_inputs, ReduceOp::kSum)));
  EXPECT_TRUE(same_bytes(bcast.tensor(), bcast_inputs[static_cast<size_t>(root)]));
  const Buffer expected_gather = reference_allgather(gather_inputs);
  if (rank == 0) {
    EXPECT_TRUE(same_bytes(gathered.tensor(), expected_gather));
  } else if (gather.test() && gather.status().ok()) {
    EXPECT_TRUE(same_bytes(gather.output(), expected_gather));
  }

  shutdown_chorus();  // the file is complete once the runtime has stopped
  bool existed = false;
  std::string text;
  if (rank == 0) {
    existed = file_exists(path);
    text = read_file(path);
    std::remove(path.c_str());
  }
  test_barrier();
  if (rank != 0) return;
  ASSERT_TRUE(existed) << path;
  const Lanes lanes = parse_trace(text);
  if (::testing::Test::HasFailure()) return;  // the details below would only repeat it

  std::set<std::string> expected_lanes = {kLarge, kGather, kBroadcast};
  for (int i = 0; i < kSmallTensors; ++i) expected_lanes.insert(small_name(i));
  std::set<std::string> actual_lanes;
  for (const auto& [tensor, spans] : lanes) actual_lanes.insert(tensor);
  EXPECT_EQ(actual_lanes, expected_lanes);

  for (int i = 0; i < kSmallTensors; ++i) {
    const std::string name = small_name(i);
    const std::vector<std::string> order = {"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES",
                                            "MEMCPY_IN_FUSION_BUFFER", "ALLREDUCE",
                                            "MEMCPY_OUT_FUSION_BUFFER"};
    EXPECT_EQ(activities(lanes, name), std::multiset<std::string>(order.begin(), order.end())) << name;
    std::vector<const Span*> spans;
    for (const std::string& activity : order) spans.push_back(the_span(lanes, name, activity));
    expect_in_order(name, spans, order);
    if (spans[3] != nullptr) {
      EXPECT_EQ(spans[3]->args, (json{{"fused_tensors", kSmallTensors}}))
          << name << " ALLREDUCE args: " << spans[3]->args;
    }
  }

  const std::vector<std::string> large_order = {"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES", "ALLREDUCE"};
  EXPECT_EQ(activities(lanes, kLarge), std::multiset<std::string>(large_order.begin(), large_order.end()))
      << "an allreduce larger than the fusion threshold runs alone, without the fusion buffer";
  expect_in_order(kLarge, {the_span(lanes, kLarge, "NEGOTIATE_ALLREDUCE"), the_span(lanes, kLarge, "ALLREDUCE")},
                  {"NEGOTIATE_ALLREDUCE", "ALLREDUCE"});

  EXPECT_EQ(activities(lanes, kGather),
            (std::multiset<std::string>{"NEGOTIATE_ALLGATHER", "WAIT_FOR_OTHER_COLLECTIVES", "ALLGATHER"}));
  expect_in_order(kGather, {the_span(lanes, kGather, "NEGOTIATE_ALLGATHER"), the_span(lanes, kGather, "ALLGATHER")},
                  {"NEGOTIATE_ALLGATHER", "ALLGATHER"});
  EXPECT_EQ(activities(lanes, kBroadcast),
            (std::multiset<std::string>{"NEGOTIATE_BROADCAST", "WAIT_FOR_OTHER_COLLECTIVES", "BROADCAST"}));
  expect_in_order(kBroadcast,
                  {the_span(lanes, kBroadcast, "NEGOTIATE_BROADCAST"), the_span(lanes, kBroadcast, "BROADCAST")},
                  {"NEGOTIATE_BROADCAST", "BROADCAST"});
  if (::testing::Test::HasFailure()) std::fprintf(stderr, "the trace:\n%s\n", text.c_str());
}

// Every rank's path differs; only rank 0's file may exist after the run.
TEST(TimelineRun, OnlyRankZeroCreatesTheFile) {
  const int rank = world_rank();
  const std::string stem = temp_dir() + "/" + shared_token() + ".only0";
  auto path_of = [&](int r) { return stem + ".rank" + std::to_string(r) + ".json"; };
  const std::string mine = path_of(rank);
  ScopedEnv env("CHORUS_TIMELINE", mine.c_str());
  ASSERT_TRUE(init_chorus());
  Buffer data = make_input(DataType::kFloat32, {4}, rank, 40, kSeed);
  Handle handle = submit([&] { return chorus::allreduce_async("timeline.only0", data.tensor()); });
  EXPECT_DONE(handle);
  shutdown_chorus();
  test_barrier();  // every rank has shut down: no file can appear any more
  if (rank == 0) {
    const std::string text = read_file(mine);
    const Lanes lanes = parse_trace(text);
    EXPECT_EQ(activities(lanes, "timeline.only0"),
              (std::multiset<std::string>{"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES", "ALLREDUCE"}))
        << text;
    for (int r = 1; r < world_size(); ++r) EXPECT_FALSE(file_exists(path_of(r))) << path_of(r);
    std::remove(mine.c_str());
  } else {
    EXPECT_FALSE(file_exists(mine)) << "rank " << rank << " created " << mine;
    std::remove(mine.c_str());
  }
  test_barrier();
}

// CHORUS_TIMELINE_MARK_CYCLES=1 (HOROVOD_TIMELINE_MARK_CYCLES from Python)
// marks the cycles of the timeline CHORUS_TIMELINE starts, as
// start_timeline(path, true) does; without it there are none (the test
// above: parse_trace refuses a marker it was not asked for).
TEST(TimelineRun, MarkCyclesSettingMarksTheCycles) {
  const int rank = world_rank();
  const std::string path = temp_dir() + "/" + shared_token() + ".marked.json";
  ScopedEnv env({{"CHORUS_TIMELINE", path.c_str()}, {"CHORUS_TIMELINE_MARK_CYCLES", "1"}});
  ASSERT_TRUE(init_chorus());
  Buffer data = make_input(DataType::kFloat32, {4}, rank, 60, kSeed);
  Handle handle = submit([&] { return chorus::allreduce_async("timeline.marked", data.tensor()); });
  EXPECT_DONE(handle);
  shutdown_chorus();
  if (rank == 0) {
    const std::string text = read_file(path);
    std::vector<double> markers;
    EXPECT_EQ(activities(parse_trace(text, &markers), "timeline.marked"),
              (std::multiset<std::string>{"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES", "ALLREDUCE"}))
        << text;
    EXPECT_FALSE(markers.empty()) << "no CYCLE_START marker with CHORUS_TIMELINE_MARK_CYCLES=1:\n" << text;
    std::remove(path.c_str());
  }
  test_barrier();
}

// The other ranks never open their CHORUS_TIMELINE, so an unwritable one does
// not fail their init().
TEST(TimelineRun, OtherRanksIgnoreAnUnwritablePath) {
  const int rank = world_rank();
  const std::string token = shared_token();
  const std::string path = rank == 0 ? temp_dir() + "/" + token + ".unwritable_elsewhere.json"
                                     : "/nonexistent-chorus-dir/" + token + "/trace.json";
  ScopedEnv env("CHORUS_TIMELINE", path.c_str());
  const ::testing::AssertionResult started = init_chorus();
  EXPECT_TRUE(started);
  // If a rank's init() failed while the others' succeeded, their runtimes
  // could not shut down (they would wait for that rank forever): fail fast.
  for (int ok : exchange(started ? 1 : 0)) {
    if (!ok) {
      std::fprintf(stderr, "rank %d: init() failed on some rank while others started; aborting\n", rank);
      std::fflush(stdout);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  Buffer data = make_input(DataType::kFloat32, {4}, rank, 50, kSeed);
  Handle handle = submit([&] { return chorus::allreduce_async("timeline.elsewhere", data.tensor()); });
  EXPECT_DONE(handle);
  shutdown_chorus();
  if (rank == 0) {
    const std::string text = read_file(path);
    EXPECT_EQ(activities(parse_trace(text), "timeline.elsewhere"),
              (std::multiset<std::string>{"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES", "ALLREDUCE"}))
        << text;
    std::remove(path.c_str());
  }
  test_barrier();
}

}  // namespace
}  // namespace chorus_test
