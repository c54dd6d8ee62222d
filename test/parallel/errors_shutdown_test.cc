// Failures that end a rank's runtime, with their own init/shutdown: a rank
// shutting down while the others wait for it. Split from errors_test.cc
// because it takes seconds. The stall inspector stopping the job, which then
// ends the whole job at shutdown(), is tested from outside the job
// (test/faults/).
#include <chrono>
#include <string>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;

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

}  // namespace
}  // namespace chorus_test
