// ShmControllerTransport over ShmGroup on MPI_COMM_WORLD (every rank of a
// ctest job is on this host): the OR of every rank's bit vector, for many
// calls in a row (the two slot sets alternate, so a fast rank must not
// overwrite what a slow one still reads), lengths from 0 words to the
// maximum, longer vectors through the wrapped MPI transport, and the
// gather and broadcast passed through. The reference ORs the vectors each
// rank computes locally from (rank, call).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/mpi/mpi_controller_transport.h"
#include "ops/shm/shm_controller_transport.h"
#include "ops/shm/shm_group.h"
#include "ops/mpi/mpi_setup_channel.h"

namespace chorus {
namespace {

constexpr size_t kMaxWords = 7;

uint64_t word_of(int rank, int call, size_t index) {
  uint64_t x = (static_cast<uint64_t>(rank) + 1) * 0x9e3779b97f4a7c15ull ^
               (static_cast<uint64_t>(call) << 20) ^ index * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  // Sparse bits, so the OR of a few ranks still shows which rank set which.
  return x & (x >> 7) & (x >> 13);
}

std::vector<uint64_t> vector_of(int rank, int call, size_t words) {
  std::vector<uint64_t> out(words);
  for (size_t i = 0; i < words; ++i) out[i] = word_of(rank, call, i);
  return out;
}

class ShmControllerTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    std::unique_ptr<ShmGroup> group;
    MpiSetupChannel world(MPI_COMM_WORLD);
    const Status status = ShmGroup::create(world, ShmControllerTransport::data_bytes(size_, kMaxWords),
                                           std::chrono::milliseconds(60000), &group);
    ASSERT_TRUE(status.ok()) << status.to_string();
    auto over_mpi = std::make_unique<MpiControllerTransport>(MPI_COMM_WORLD, LocalPeers());
    transport_ = std::make_unique<ShmControllerTransport>(std::move(over_mpi), std::move(group), kMaxWords);
  }

  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<ShmControllerTransport> transport_;
};

TEST_F(ShmControllerTransportTest, OrOfEveryRanksVectorOverManyCallsAndLengths) {
  for (int call = 0; call < 300; ++call) {
    const size_t words = static_cast<size_t>(call) % (kMaxWords + 3);  // 0 .. kMaxWords + 2
    // A rank that is late now and then, so the others run ahead to the next
    // call while it still reads this one.
    if (call % 37 == rank_) usleep(2000);
    std::vector<uint64_t> bits = vector_of(rank_, call, words);
    const Status status = transport_->allreduce_or(&bits);
    ASSERT_TRUE(status.ok()) << status.to_string();
    std::vector<uint64_t> expected(words, 0);
    for (int r = 0; r < size_; ++r) {
      const std::vector<uint64_t> theirs = vector_of(r, call, words);
      for (size_t i = 0; i < words; ++i) expected[i] |= theirs[i];
    }
    ASSERT_EQ(bits, expected) << "call " << call << ", " << words << " words";
  }
}

TEST_F(ShmControllerTransportTest, GatherAndBroadcastPassThrough) {
  EXPECT_EQ(transport_->rank(), rank_);
  EXPECT_EQ(transport_->size(), size_);
  std::vector<std::string> all;
  ASSERT_TRUE(transport_->gather_to_coordinator("rank" + std::to_string(rank_), &all).ok());
  if (rank_ == 0) {
    ASSERT_EQ(all.size(), static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) EXPECT_EQ(all[static_cast<size_t>(r)], "rank" + std::to_string(r));
  } else {
    EXPECT_TRUE(all.empty());
  }
  std::string blob = rank_ == 0 ? "from the coordinator" : "";
  ASSERT_TRUE(transport_->broadcast_from_coordinator(&blob).ok());
  EXPECT_EQ(blob, "from the coordinator");
}

}  // namespace
}  // namespace chorus
