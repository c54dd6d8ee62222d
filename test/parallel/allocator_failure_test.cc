// An output allocator that fails (or throws) on one rank fails only that
// rank's handle: the collective still runs there (into scratch memory), so
// the other ranks get correct results instead of waiting forever, and the
// runtime stays usable everywhere.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

using ::testing::HasSubstr;

class AllocatorFailure : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(init_chorus()); }
  static void TearDownTestSuite() { shutdown_chorus(); }

  // Fails on the last rank: by returning an error, or by throwing.
  static chorus::OutputAllocator failing_on_last_rank(bool throws) {
    return [throws](const chorus::Shape& shape, chorus::DataType dtype, chorus::Device device,
                    chorus::Tensor* out) -> chorus::Status {
      if (world_rank() == world_size() - 1) {
        if (throws) throw std::runtime_error("framework out of memory");
        return chorus::Status::Internal("no memory for this test");
      }
      static std::vector<std::vector<int32_t>> keep;  // outlives the handle
      keep.emplace_back(static_cast<size_t>(chorus::num_elements(shape)));
      *out = chorus::Tensor(keep.back().data(), dtype, shape, device);
      return chorus::Status::OK();
    };
  }

  void expect_outcome(const chorus::Handle& handle, const char* words) {
    const chorus::Status status = finish(handle);
    if (world_rank() == world_size() - 1) {
      EXPECT_FALSE(status.ok());
      EXPECT_THAT(status.message(), HasSubstr(words));
    } else {
      EXPECT_TRUE(is_ok(status));
    }
  }

  void expect_usable(const std::string& name) {
    std::vector<int32_t> value{world_rank() + 1};
    chorus::AllreduceOptions sum;
    sum.op = chorus::ReduceOp::kSum;
    EXPECT_TRUE(is_ok(thrown_by([&] {
      chorus::allreduce(name, chorus::Tensor(value.data(), chorus::DataType::kInt32, {1}), sum);
    })));
    EXPECT_EQ(value[0], world_size() * (world_size() + 1) / 2);
  }
};

TEST_F(AllocatorFailure, AllgatherFailsOnlyWhereTheAllocatorFailed) {
  for (bool throws : {false, true}) {
    std::vector<int32_t> mine(3, world_rank());
    chorus::Handle handle = submit([&] {
      return chorus::allgather_async("alloc.allgather", chorus::Tensor(mine.data(), chorus::DataType::kInt32, {3}),
                                     failing_on_last_rank(throws));
    });
    expect_outcome(handle, throws ? "framework out of memory" : "no memory for this test");
    if (world_rank() != world_size() - 1 && handle.status().ok()) {
      const chorus::Tensor out = handle.output();
      ASSERT_EQ(out.elements(), 3 * world_size());
      const int32_t* data = static_cast<const int32_t*>(out.data);
      for (int r = 0; r < world_size(); ++r) {
        for (int k = 0; k < 3; ++k) EXPECT_EQ(data[3 * r + k], r);
      }
    }
    expect_usable(throws ? "alloc.after_allgather_throw" : "alloc.after_allgather");
  }
}

TEST_F(AllocatorFailure, ReducescatterAndAlltoallFailOnlyWhereTheAllocatorFailed) {
  const int n = world_size();
  std::vector<int32_t> rows(static_cast<size_t>(2 * n), 1);
  chorus::Handle scatter = submit([&] {
    return chorus::reducescatter_async("alloc.reducescatter",
                                       chorus::Tensor(rows.data(), chorus::DataType::kInt32, {2 * n}),
                                       chorus::ReduceOp::kSum, failing_on_last_rank(false));
  });
  expect_outcome(scatter, "no memory for this test");
  if (world_rank() != n - 1 && scatter.status().ok()) {
    const chorus::Tensor out = scatter.output();
    ASSERT_EQ(out.elements(), 2);
    for (int k = 0; k < 2; ++k) EXPECT_EQ(static_cast<const int32_t*>(out.data)[k], n);
  }
  std::vector<int32_t> send(static_cast<size_t>(n), world_rank());
  chorus::Handle a2a = submit([&] {
    return chorus::alltoall_async("alloc.alltoall", chorus::Tensor(send.data(), chorus::DataType::kInt32, {n}), {},
                                  failing_on_last_rank(false));
  });
  expect_outcome(a2a, "no memory for this test");
  if (world_rank() != n - 1 && a2a.status().ok()) {
    const chorus::Tensor out = a2a.output();
    ASSERT_EQ(out.elements(), n);
    for (int r = 0; r < n; ++r) EXPECT_EQ(static_cast<const int32_t*>(out.data)[r], r);
  }
  expect_usable("alloc.after_scatter");
}

}  // namespace
}  // namespace chorus_test
