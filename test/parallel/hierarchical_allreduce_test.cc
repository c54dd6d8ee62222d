// HierarchicalAllreduce on one machine, with the ranks of this job divided
// into pretend hosts (each with its own shared segment and cross
// communicators, exactly as on real hosts; only the transport under MPI
// differs): 2 hosts x 1 rank at np 2, 3 x 1 at np 3, and at np 4 2 x 2 in
// blocks, 2 x 2 round robin and 4 x 1. Every dtype x reduce op x count
// (uneven shares, partial chunks), in place and not, must match the
// hierarchical reference (hosts first in local-rank order, then hosts in
// order) bit for bit. Also: a failed cross-host step fails its local peers
// at once with its reason (never at the 300 s timeout), the failure
// mechanism itself on a plain ShmAllreduce, and hosts of different sizes
// are refused on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ops/shm/hierarchical_allreduce.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"
#include "ops/mpi/mpi_setup_channel.h"
#include "support/hierarchical_reference.h"

namespace chorus_test {
namespace {

using chorus::DataType;
using chorus::HierarchicalAllreduce;
using chorus::HierarchicalAllreduceOptions;
using chorus::ReduceOp;
using chorus::Status;
using chorus::StatusCode;

const DataType kDtypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kUInt16,
                            DataType::kInt32,   DataType::kInt64,   DataType::kFloat16,  DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// The pretend hosts this job size is divided into.
std::vector<HostLayout> layouts_for(int size) {
  if (size == 4) return {HostLayout::block(2, 2), HostLayout::cyclic(2, 2), HostLayout::block(4, 1)};
  return {HostLayout::block(size, 1)};
}

struct Instance {
  HostLayout layout;
  int64_t chunk_bytes;
  std::unique_ptr<HierarchicalAllreduce> algorithm;
};

std::unique_ptr<HierarchicalAllreduce> create(const HostLayout& layout, HierarchicalAllreduceOptions options) {
  const int me = world_rank();
  std::unique_ptr<HierarchicalAllreduce> out;
  const Status status = HierarchicalAllreduce::create(MPI_COMM_WORLD, layout.host_of[static_cast<size_t>(me)],
                                                      layout.local_of[static_cast<size_t>(me)], options, &out);
  EXPECT_TRUE(status.ok()) << layout.describe() << ": " << status.to_string();
  return out;
}

class HierarchicalAllreduceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const HostLayout& layout : layouts_for(world_size())) {
      // 1 KiB chunks: counts below split into many chunks and many
      // cross-host steps; 128 bytes: shares of a cache line or none.
      for (int64_t chunk : {int64_t{1024}, int64_t{128}}) {
        HierarchicalAllreduceOptions options;
        options.chunk_bytes = chunk;
        instances_.push_back(Instance{layout, chunk, create(layout, options)});
      }
    }
  }
  static void TearDownTestSuite() { instances_.clear(); }

  static void check(Instance& instance, DataType dtype, ReduceOp op, int64_t count, bool in_place, uint64_t seed) {
    ASSERT_NE(instance.algorithm, nullptr);
    const int me = world_rank();
    const std::vector<Bytes> inputs = order_sensitive_inputs(dtype, op, world_size(), seed, count);
    Bytes output(inputs[static_cast<size_t>(me)].size(), 0xa5);
    if (in_place) output = inputs[static_cast<size_t>(me)];
    const void* input = in_place ? output.data() : inputs[static_cast<size_t>(me)].data();
    const Status status = instance.algorithm->allreduce(input, output.data(), count, dtype, op);
    ASSERT_TRUE(status.ok()) << status.to_string();
    const Bytes expected = hierarchical_reference(dtype, op, inputs, instance.layout);
    const std::vector<int64_t> wrong = differing_elements(output, expected, chorus::dtype_size(dtype));
    EXPECT_TRUE(wrong.empty()) << instance.layout.describe() << ", chunk " << instance.chunk_bytes << ": "
                               << chorus::dtype_name(dtype) << " " << chorus::reduce_op_name(op) << " count "
                               << count << (in_place ? " in place" : "") << ": element " << wrong.front()
                               << " differs from the hierarchical reference";
  }

  static std::vector<Instance> instances_;
};

std::vector<Instance> HierarchicalAllreduceTest::instances_;

TEST_F(HierarchicalAllreduceTest, EveryDtypeOpAndCountMatchesTheHostsThenHostsOrder) {
  // 0 and 1 element; fewer elements than shares; a line more or less than a
  // chunk; counts that leave a partial last chunk.
  const int64_t counts[] = {0, 1, 3, 63, 65, 1000, 2347};
  uint64_t seed = 1;
  for (Instance& instance : instances_) {
    if (instance.chunk_bytes != 1024) continue;
    for (DataType dtype : kDtypes) {
      for (ReduceOp op : kOps) {
        for (int64_t count : counts) {
          ++seed;
          check(instance, dtype, op, count, /*in_place=*/seed % 2 == 0, seed);
        }
      }
    }
  }
}

TEST_F(HierarchicalAllreduceTest, CacheLineSharesAndEmptyShares) {
  for (Instance& instance : instances_) {
    if (instance.chunk_bytes != 128) continue;
    for (DataType dtype : {DataType::kUInt8, DataType::kFloat16, DataType::kFloat32, DataType::kFloat64}) {
      for (int64_t count : {int64_t{5}, int64_t{17}, int64_t{129}, int64_t{515}}) {
        check(instance, dtype, ReduceOp::kSum, count, false, 100 + static_cast<uint64_t>(count));
      }
    }
  }
}

TEST_F(HierarchicalAllreduceTest, ManyConsecutiveCallsStayInStepAcrossHosts) {
  for (int call = 0; call < 80; ++call) {
    Instance& instance = instances_[static_cast<size_t>(call) % instances_.size()];
    check(instance, kDtypes[call % std::size(kDtypes)], kOps[call % 4], (call * 37) % 300, call % 3 == 0,
          1000 + static_cast<uint64_t>(call));
  }
}

TEST(HierarchicalAllreduceDefaults, LargeMessagesStreamThroughTheDefaultChunks) {
  const HostLayout layout = layouts_for(world_size()).front();
  std::unique_ptr<HierarchicalAllreduce> algorithm = create(layout, HierarchicalAllreduceOptions());
  ASSERT_NE(algorithm, nullptr);
  EXPECT_EQ(algorithm->hosts(), layout.hosts);
  EXPECT_EQ(algorithm->local_size(), layout.local_size);
  // 2.5 MiB of float32 and bfloat16 sums: two chunks of 2 MiB, the last partial.
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    const int64_t count = (5 << 20) / 2 / static_cast<int64_t>(chorus::dtype_size(dtype)) + 3;
    const std::vector<Bytes> inputs = order_sensitive_inputs(dtype, ReduceOp::kSum, world_size(), 77, count);
    Bytes data = inputs[static_cast<size_t>(world_rank())];
    ASSERT_TRUE(algorithm->allreduce(data.data(), data.data(), count, dtype, ReduceOp::kSum).ok());
    const Bytes expected = hierarchical_reference(dtype, ReduceOp::kSum, inputs, layout);
    const std::vector<int64_t> wrong = differing_elements(data, expected, chorus::dtype_size(dtype));
    EXPECT_TRUE(wrong.empty()) << chorus::dtype_name(dtype) << ": element " << wrong.front() << " differs";
  }
}

// The failure mechanism on one host: rank `failing` returns an error from
// its step on one chunk; the others are waiting for it to publish and must
// fail at once with its reason. The group's timeout is 300 s, far beyond the
// test's deadline: a test that passes did not wait for it.
TEST(ShmAllreduceFailure, AFailedStepFailsEveryPeerAtOnceWithItsReason) {
  const int me = world_rank();
  const int failing = world_size() - 1;
  std::unique_ptr<chorus::ShmGroup> group;
  constexpr int64_t kChunk = 1024;
  chorus::MpiSetupChannel world(MPI_COMM_WORLD);
  ASSERT_TRUE(chorus::ShmGroup::create(world, chorus::ShmAllreduce::data_bytes(world_size(), kChunk),
                                       std::chrono::milliseconds(300'000), &group)
                  .ok());
  chorus::ShmAllreduce algorithm(group.get(), chorus::ShmAllreduceOptions{kChunk});
  int steps = 0;
  const auto step = [&](void*, int64_t) {
    return me == failing && ++steps == 3 ? Status::Internal("injected fault") : Status::OK();
  };
  std::vector<float> data(4096, 1.0f);  // 16 chunks
  const Status status =
      algorithm.allreduce(data.data(), data.data(), static_cast<int64_t>(data.size()), DataType::kFloat32,
                          ReduceOp::kSum, step);
  ASSERT_FALSE(status.ok());
  if (me == failing) {
    EXPECT_EQ(status.message(), "injected fault");
  } else {
    EXPECT_EQ(status.code(), StatusCode::kAborted);
    EXPECT_NE(status.message().find("Shared-memory allreduce: rank " + std::to_string(failing) +
                                    " failed (injected fault) while rank " + std::to_string(me) +
                                    " was waiting for it to reduce chunk 3 of 16"),
              std::string::npos)
        << status.message();
  }
  // Broken for good: a later call fails at once with the same error.
  const Status again = algorithm.allreduce(data.data(), data.data(), 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(again.message(), status.message());
}

// The same through the hierarchical algorithm: the cross-host step of the
// highest local rank fails on every host (as one whose MPI call returned an
// error would), so no rank is left inside an MPI call with a peer that gave
// up; every local peer fails at once naming the failed rank.
TEST(HierarchicalAllreduceFailure, AFailedCrossStepFailsTheLocalPeersAtOnce) {
  const HostLayout layout = layouts_for(world_size()).front();
  const int me = world_rank();
  const int my_local = layout.local_of[static_cast<size_t>(me)];
  const int failing_local = layout.local_size - 1;
  HierarchicalAllreduceOptions options;
  options.chunk_bytes = 1024;
  options.before_cross_step = [&](int64_t step) {
    return my_local == failing_local && step == 2 ? Status::Internal("injected cross-host fault") : Status::OK();
  };
  std::unique_ptr<HierarchicalAllreduce> algorithm = create(layout, options);
  ASSERT_NE(algorithm, nullptr);
  std::vector<float> data(4096, 1.0f);
  const Status status = algorithm->allreduce(data.data(), data.data(), static_cast<int64_t>(data.size()),
                                             DataType::kFloat32, ReduceOp::kSum);
  ASSERT_FALSE(status.ok());
  const std::string cross_failure = "the cross-host step of local rank " + std::to_string(failing_local);
  if (my_local == failing_local) {
    EXPECT_EQ(status.code(), StatusCode::kInternal);
    EXPECT_NE(status.message().find(cross_failure), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("failed: injected cross-host fault"), std::string::npos) << status.message();
  } else {
    const int failed_rank = layout.rank_at(layout.host_of[static_cast<size_t>(me)], failing_local);
    EXPECT_EQ(status.code(), StatusCode::kAborted);
    EXPECT_NE(status.message().find("rank " + std::to_string(failed_rank) + " failed (" + cross_failure),
              std::string::npos)
        << status.message();
  }
}

TEST(HierarchicalAllreduceSetup, HostsOfDifferentSizesAreRefusedOnEveryRank) {
  // The last rank alone on host 1, the others on host 0: unequal from np 3
  // on; at np 2 it is 2 hosts of 1 and must be accepted.
  const int me = world_rank();
  const int last = world_size() - 1;
  std::unique_ptr<HierarchicalAllreduce> algorithm;
  const Status status =
      HierarchicalAllreduce::create(MPI_COMM_WORLD, me == last ? 1 : 0, me == last ? 0 : me, {}, &algorithm);
  if (world_size() == 2) {
    EXPECT_TRUE(status.ok()) << status.to_string();
    return;
  }
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "hierarchical allreduce needs the same number of ranks on every host, but hosts "
                              "hold between 1 and " + std::to_string(world_size() - 1) + " ranks");
}

}  // namespace
}  // namespace chorus_test
