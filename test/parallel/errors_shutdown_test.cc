// Failures that end a rank's runtime, each test with its own init/shutdown:
// a rank shutting down while the others wait for it, and the stall inspector
// stopping the job when a rank never submits a tensor. Split from
// errors_test.cc because both tests take seconds and change the environment.
#include <chrono>
#include <string>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using ::testing::MatchesRegex;

constexpr uint64_t kSeed = 0x5707;

TEST(PeerShutdown, PendingAllreduceFailsNamingTheRankThatShutDown) {
  ASSERT_TRUE(init_chorus());
  const int rank = world_rank();
  Buffer mine = make_input(DataType::kFloat32, {6}, rank, 0, kSeed);
  Handle handle;
  if (rank != 1) handle = submit([&] { return chorus::allreduce_async("peer.pending", mine.tensor()); });
  test_barrier();  // the others' allreduce is submitted before rank 1 leaves
  if (rank == 1) {
    EXPECT_NO_THROW(chorus::shutdown());
    EXPECT_FALSE(chorus::is_initialized());
  } else {
    const chorus::Status status = finish(handle, std::chrono::seconds(30));
    EXPECT_EQ(status.code(), chorus::StatusCode::kShutdown) << status.message();
    EXPECT_EQ(status.message(), "Rank 1 shut down while allreduce 'peer.pending' was pending");
  }
  test_barrier();
  shutdown_chorus();
  // A fresh init() after all that works normally.
  ASSERT_TRUE(init_chorus());
  const auto inputs = make_inputs(DataType::kInt64, {3}, world_size(), 1, kSeed);
  Buffer data = inputs[rank];
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  Handle again = submit([&] { return chorus::allreduce_async("peer.pending", data.tensor(), sum); });
  EXPECT_DONE(again);
  EXPECT_TRUE(matches(data.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  shutdown_chorus();
}

TEST(StallInspector, StopsTheJobWhenOneRankNeverSubmits) {
  ScopedEnv env({{"CHORUS_STALL_CHECK_SECONDS", "1"}, {"CHORUS_STALL_SHUTDOWN_SECONDS", "3"}});
  ASSERT_TRUE(init_chorus());
  const int rank = world_rank();
  // A completed collective first, so the stall is not confused with a slow
  // start-up.
  Buffer warm = make_input(DataType::kFloat32, {2}, rank, 1, kSeed);
  Handle warm_up = submit([&] { return chorus::allreduce_async("stall.warm", warm.tensor()); });
  EXPECT_DONE(warm_up);

  Buffer mine = make_input(DataType::kFloat32, {4}, rank, 2, kSeed);
  if (rank != 1) {
    const auto start = std::chrono::steady_clock::now();
    Handle handle = submit([&] { return chorus::allreduce_async("stall.missing", mine.tensor()); });
    const chorus::Status status = finish(handle, std::chrono::seconds(20));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.code(), chorus::StatusCode::kTimeout) << "not stopped after 20 s";
    EXPECT_THAT(status.message(), MatchesRegex("Stopping after a stall of [0-9.]+ s: allreduce "
                                               "'stall\\.missing' is waiting for ranks \\[1\\]"));
    EXPECT_GE(seconds, 2.5) << "stopped before CHORUS_STALL_SHUTDOWN_SECONDS";
    EXPECT_LE(seconds, 10.0) << "stall shutdown took too long";
  }
  test_barrier();  // the others have seen their handle fail
  if (rank == 1) {
    // Rank 1 never submitted anything, but its runtime was stopped too: any
    // call now throws. The stop may reach it a moment after the others.
    const bool stopped = eventually(
        [] { return !thrown_by([] { (void)chorus::size(); }).ok(); }, std::chrono::seconds(5));
    EXPECT_TRUE(stopped) << "rank 1: chorus::size() still works after the stall shutdown";
    const chorus::Status status =
        thrown_by([&] { (void)chorus::allreduce_async("stall.after", mine.tensor()); });
    EXPECT_FALSE(status.ok()) << "rank 1: allreduce_async accepted work after the stall shutdown";
    const chorus::Status barrier = thrown_by([] { (void)chorus::barrier_async(); });
    EXPECT_FALSE(barrier.ok()) << "rank 1: barrier_async accepted work after the stall shutdown";
  }
  test_barrier();
  shutdown_chorus();
  EXPECT_FALSE(chorus::is_initialized());
}

}  // namespace
}  // namespace chorus_test
