// Point-to-point transfers that a shutdown ends, with their own
// init/shutdown per test: a peer that shuts down while this rank waits for
// its message, and this rank's own shutdown with transfers in flight. Each
// must fail naming the ranks, never hang. (A peer that dies: test/faults/.)
#include <chrono>
#include <string>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::Status;

TEST(PointToPointShutdown, PendingReceiveFailsNamingThePeerThatShutDown) {
  ASSERT_TRUE(init_chorus());
  const int rank = world_rank();
  Buffer into(DataType::kFloat32, {16});
  Handle handle;
  if (rank != 1) handle = submit([&] { return chorus::recv_async("p2p.pending", into.tensor(), 1); });
  test_barrier();  // the receives are posted before rank 1 leaves
  if (rank == 1) {
    EXPECT_NO_THROW(chorus::shutdown());
  } else {
    const Status status = finish(handle, std::chrono::seconds(30));
    EXPECT_EQ(status.code(), chorus::StatusCode::kShutdown) << status.message();
    EXPECT_EQ(status.message(), "Rank 1 shut down while a receive of 'p2p.pending' from rank 1 was pending on rank " +
                                    std::to_string(rank));
  }
  test_barrier();
  shutdown_chorus();
}

TEST(PointToPointShutdown, OwnShutdownFailsTransfersInFlightAndLaterCallsThrow) {
  ASSERT_TRUE(init_chorus());
  const int rank = world_rank();
  const int peer = rank == 0 ? 1 : 0;
  Buffer into(DataType::kInt32, {4});
  // Nobody sends these: only the shutdown ends them.
  Handle never = submit([&] { return chorus::recv_async("p2p.never", into.tensor(), peer); });
  EXPECT_FALSE(never.test());
  EXPECT_FALSE(never.wait_for(std::chrono::milliseconds(20)));
  test_barrier();
  if (rank == 0) {
    EXPECT_NO_THROW(chorus::shutdown());
    const Status status = finish(never, std::chrono::seconds(30));
    EXPECT_EQ(status.code(), chorus::StatusCode::kShutdown);
    EXPECT_EQ(status.message(), "Chorus has been shut down on rank 0 while a receive of 'p2p.never' from rank 1 was pending");
    const Status after = thrown_by([&] { chorus::send_async("p2p.after", into.tensor(), peer); });
    EXPECT_EQ(after.message(), "Chorus has been shut down");
  } else {
    const Status status = finish(never, std::chrono::seconds(30));
    EXPECT_EQ(status.code(), chorus::StatusCode::kShutdown);
    EXPECT_EQ(status.message(), "Rank 0 shut down while a receive of 'p2p.never' from rank 0 was pending on rank " +
                                    std::to_string(rank));
  }
  test_barrier();
  shutdown_chorus();
  // A fresh init() works normally, point-to-point included.
  ASSERT_TRUE(init_chorus());
  Buffer mine = make_input(DataType::kInt32, {4}, rank, 1, 77);
  if (rank < 2) {
    Handle recv = submit([&] { return chorus::recv_async("p2p.again", into.tensor(), peer); });
    Handle send = submit([&] { return chorus::send_async("p2p.again", mine.tensor(), peer); });
    EXPECT_DONE(send);
    EXPECT_DONE(recv);
    EXPECT_TRUE(same_bytes(into.tensor(), make_input(DataType::kInt32, {4}, peer, 1, 77)));
  }
  test_barrier();
  shutdown_chorus();
}

}  // namespace
}  // namespace chorus_test
