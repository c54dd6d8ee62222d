// NcclBackend on GPU memory beyond the Backend contract (every collective x
// dtype x op, factors, uneven counts, every root, refusals: the "nccl" row
// of backend_contract_test.cc): its rank, size and device, a 16-bit sum
// scaled with one rounding on one rank, and the argument errors in NCCL's
// own words. Inputs are uploaded from support/reference's buffers and
// results downloaded after the work is done. Without a GPU per rank every
// test skips, saying why (here, on machines without a GPU, it only proves
// that the test builds). abort() and the timeout: nccl_abort_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/nccl_job.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::NcclBackend;
using chorus::Status;
using chorus::StatusCode;
using chorus::WorkPtr;
using ::testing::HasSubstr;

constexpr uint64_t kSeed = 0x9cc1;
constexpr int64_t kCount = 1000;

std::string describe(DataType dtype, ReduceOp op, double factor) {
  return std::string(chorus::dtype_name(dtype)) + " " + chorus::reduce_op_name(op) + " x " + std::to_string(factor);
}

class NcclBackendTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    shortage_ = new std::string(gpu_shortage());
    if (shortage_->empty()) setup_ = new Status(NcclJob::create(chorus::NcclOptions{}, &job_));
  }
  static void TearDownTestSuite() {
    job_.reset();
    delete shortage_;
    delete setup_;
    shortage_ = nullptr;
    setup_ = nullptr;
  }
  void SetUp() override {
    if (!shortage_->empty()) GTEST_SKIP() << *shortage_;
    ASSERT_TRUE(is_ok(*setup_));
  }

  NcclBackend& backend() { return job_->backend(); }
  chorus::CudaDevice& device() { return job_->device(); }
  int rank() const { return world_rank(); }
  int size() const { return world_size(); }

  std::shared_ptr<void> upload(const Buffer& host, size_t bytes = 0) {
    return to_device(device(), host.data(), bytes > 0 ? bytes : std::max<size_t>(host.bytes(), 1));
  }
  Buffer download(const void* from, DataType dtype, int64_t elements) {
    Buffer out(dtype, {elements});
    to_host(device(), out.data(), from, out.bytes());
    return out;
  }
  // The work's outcome: it must finish (test() turns true) and succeed.
  ::testing::AssertionResult done(const WorkPtr& work) {
    if (!work) return ::testing::AssertionFailure() << "no work";
    return is_ok(work->wait());
  }

  static std::string* shortage_;
  static Status* setup_;
  static std::unique_ptr<NcclJob> job_;
};
std::string* NcclBackendTest::shortage_ = nullptr;
Status* NcclBackendTest::setup_ = nullptr;
std::unique_ptr<NcclJob> NcclBackendTest::job_;

// Its name, devices and collectives are the Backend contract's
// (backend_contract_test.cc, the "nccl" row).
TEST_F(NcclBackendTest, RunsOnItsRanksGpuAndLeavesFusionToTheExecutor) {
  EXPECT_EQ(backend().device_ops(chorus::Device::cuda(rank())), &device());
  EXPECT_FALSE(backend().fuses_in_place(kCount, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_EQ(backend().rank(), rank());
  EXPECT_EQ(backend().size(), size());
}

// One rank: NCCL's "sum" is the input itself, so a scaled 16-bit result must
// be the float32 product rounded once, as on the CPU path (with more ranks
// NCCL adds 16-bit values in 16 bits, rounding each step).
TEST_F(NcclBackendTest, ScalesA16BitSumWithOneRounding) {
  if (size() != 1) GTEST_SKIP() << "one rank only: NCCL adds 16-bit values in 16 bits";
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    for (double factor : {1.0 / 3, 0.1, 0.5}) {
      SCOPED_TRACE(describe(dtype, ReduceOp::kSum, factor));
      const Buffer input = make_input(dtype, {kCount}, 0, 7, kSeed, Values::kRandom);
      std::shared_ptr<void> memory = upload(input);
      ASSERT_TRUE(done(backend().allreduce(memory.get(), memory.get(), kCount, dtype, ReduceOp::kSum, factor)));
      const Buffer result = download(memory.get(), dtype, kCount);
      for (int64_t i = 0; i < kCount; ++i) {
        const float product = static_cast<float>(input.get(i)) * static_cast<float>(factor);
        ASSERT_EQ(result.get(i), round_once(dtype, product)) << "element " << i << " of " << input.get(i);
      }
    }
  }
}

// Errors in the arguments come back as work that failed before any NCCL
// call, on the rank that made them; the communicator stays usable (every
// rank makes the same mistake here, so none is left waiting).
TEST_F(NcclBackendTest, RefusesWhatNcclCannotDo) {
  std::shared_ptr<void> memory = to_device(device(), nullptr, 64);
  const auto failure = [](const WorkPtr& work) { return work->test() ? work->wait() : Status::Internal("pending"); };
  const Status boolean = failure(backend().allreduce(memory.get(), memory.get(), 8, DataType::kBool, ReduceOp::kSum, 1.0));
  EXPECT_EQ(boolean.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(boolean.message(), HasSubstr("dtype 'bool' cannot be reduced by the NCCL backend"));
  for (DataType dtype : {DataType::kInt16, DataType::kUInt16}) {
    const std::string refused = std::string("the NCCL backend cannot reduce ") + chorus::dtype_name(dtype) + " tensors";
    EXPECT_THAT(backend().check_reduction(dtype).message(), HasSubstr(refused));
    const Status reduced = failure(backend().allreduce(memory.get(), memory.get(), 8, dtype, ReduceOp::kMax, 1.0));
    EXPECT_THAT(reduced.message(), HasSubstr("allreduce: " + refused));
  }
  const Status bogus = failure(backend().allgatherv(memory.get(), memory.get(), std::vector<int64_t>(size(), 1),
                                                    static_cast<DataType>(42)));
  EXPECT_THAT(bogus.message(), HasSubstr("allgatherv: invalid dtype 42"));
  const Status average =
      failure(backend().allreduce(memory.get(), memory.get(), 8, DataType::kFloat32, ReduceOp::kAverage, 1.0));
  EXPECT_THAT(average.message(), HasSubstr("reduce op 'average' is not supported"));
  const Status integer =
      failure(backend().allreduce(memory.get(), memory.get(), 8, DataType::kInt32, ReduceOp::kSum, 0.5));
  EXPECT_THAT(integer.message(), HasSubstr("a int32 result can only be scaled by 1"));
  const Status negative =
      failure(backend().allreduce(memory.get(), memory.get(), -1, DataType::kInt32, ReduceOp::kSum, 1.0));
  EXPECT_THAT(negative.message(), HasSubstr("allreduce: count is negative: -1"));
  const Status huge = failure(
      backend().allreduce(memory.get(), memory.get(), int64_t{1} << 62, DataType::kFloat64, ReduceOp::kSum, 1.0));
  EXPECT_THAT(huge.message(), HasSubstr("elements whose bytes a buffer can address"));
  const Status length = failure(backend().allgatherv(memory.get(), memory.get(), {1, 1, 1, 1, 1}, DataType::kInt8));
  EXPECT_THAT(length.message(), HasSubstr("expected " + std::to_string(size()) + " counts (one per rank), got 5"));
  const Status root = failure(backend().broadcast(memory.get(), 8, size()));
  EXPECT_THAT(root.message(), HasSubstr("root rank " + std::to_string(size()) + " is not in [0, "));
  const Status null = failure(backend().allreduce(nullptr, memory.get(), 8, DataType::kInt8, ReduceOp::kSum, 1.0));
  EXPECT_THAT(null.message(), HasSubstr("allreduce: input is null but holds 8 elements"));
  std::vector<int64_t> ones(static_cast<size_t>(size()), 1);
  const Status same = failure(backend().alltoallv(memory.get(), ones, memory.get(), ones, DataType::kInt8));
  EXPECT_THAT(same.message(), HasSubstr("alltoallv: input and output must be different buffers"));
  // Still usable.
  EXPECT_TRUE(done(backend().barrier()));
}

}  // namespace
}  // namespace chorus_test
