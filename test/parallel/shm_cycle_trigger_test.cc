// ShmCycleTrigger over a ShmGroup on MPI_COMM_WORLD (every rank of a ctest
// job is on this host): every rank takes part in every cycle, whichever rank
// has the work that asks for it (rank 0 itself, a worker that rings the
// doorbell, a late rank), a doorbell waits while rank 0 has nothing in
// flight, and rank 0's timer starts a cycle nobody asked for. After each cycle an MPI_Allgather stands in for the negotiation (a
// collective every rank runs once per cycle) and checks that all ranks are
// in the same cycle. A dead rank 0 is test/shm_crash's trigger scenario.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "ops/shm/shm_cycle_trigger.h"
#include "ops/shm/shm_group.h"
#include "ops/mpi/mpi_setup_channel.h"

namespace chorus {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class ShmCycleTriggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    std::unique_ptr<ShmGroup> group;
    MpiSetupChannel world(MPI_COMM_WORLD);
    const Status status =
        ShmGroup::create(world, ShmCycleTrigger::data_bytes(size_), milliseconds(60000), &group);
    ASSERT_TRUE(status.ok()) << status.to_string();
    trigger_ = std::make_unique<ShmCycleTrigger>(std::move(group), 0.0, LocalPeers());
  }

  // The negotiation's stand-in: every rank's cycle count, checked equal.
  void expect_same_cycle_everywhere(int cycle) {
    std::vector<int> all(static_cast<size_t>(size_));
    MPI_Allgather(&cycle, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size_; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], cycle) << "rank " << r;
  }

  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<ShmCycleTrigger> trigger_;
};

TEST_F(ShmCycleTriggerTest, EveryRankJoinsEveryCycleWhoeverAsksForIt) {
  for (int cycle = 0; cycle < 40; ++cycle) {
    // Only one rank has work; the others have nothing to ask for and must
    // still be started. Now and then the rank with work is late.
    const bool mine = cycle % size_ == rank_;
    if (mine && cycle % 3 == 1) usleep(3000);
    if (mine) trigger_->wake_signal()->notify();  // as an enqueue does
    const LocalWork work{[&] { return mine; }, [] { return uint64_t{1}; }, [] { return true; }};
    const Status status = trigger_->wait_for_cycle(work, std::nullopt);
    ASSERT_TRUE(status.ok()) << "cycle " << cycle << ": " << status.to_string();
    expect_same_cycle_everywhere(cycle);
  }
}

TEST_F(ShmCycleTriggerTest, EveryRankWithWorkAtOnceStartsOneCycle) {
  for (int cycle = 0; cycle < 40; ++cycle) {
    const LocalWork work{[] { return true; }, [] { return uint64_t{1}; }, [] { return true; }};
    const Status status = trigger_->wait_for_cycle(work, std::nullopt);
    ASSERT_TRUE(status.ok()) << "cycle " << cycle << ": " << status.to_string();
    expect_same_cycle_everywhere(cycle);
  }
}

TEST_F(ShmCycleTriggerTest, ALoneDoorbellWaitsWhileRankZeroHasNothingInFlight) {
  // Rank 1 asks; rank 0 has nothing of its own, so no collective could
  // complete, and it starts the cycle only after kLoneDoorbellDelay (5 ms).
  // With something of its own in flight it starts at once (not timed).
  for (bool in_flight : {false, true}) {
    const bool asks = rank_ == 1;
    const LocalWork work{[&] { return asks; }, [] { return uint64_t{1}; }, [] { return true; },
                         [&] { return in_flight; }};
    if (asks) trigger_->wake_signal()->notify();
    const auto start = Clock::now();
    const Status status = trigger_->wait_for_cycle(work, std::nullopt);
    ASSERT_TRUE(status.ok()) << status.to_string();
    if (asks && !in_flight) {
      EXPECT_GE(Clock::now() - start, milliseconds(5));
    }
    expect_same_cycle_everywhere(in_flight ? 1 : 0);
  }
}

TEST_F(ShmCycleTriggerTest, RankZerosTimerStartsACycleNobodyAskedFor) {
  const LocalWork nothing{[] { return false; }, [] { return uint64_t{0}; }, [] { return false; }};
  for (int cycle = 0; cycle < 3; ++cycle) {
    const auto start = Clock::now();
    const auto timer = start + milliseconds(50);
    const Status status = trigger_->wait_for_cycle(nothing, timer);  // only rank 0 reads the timer
    ASSERT_TRUE(status.ok()) << status.to_string();
    if (rank_ == 0) {
      EXPECT_GE(Clock::now(), timer);
    }
    expect_same_cycle_everywhere(cycle);
  }
}

}  // namespace
}  // namespace chorus
