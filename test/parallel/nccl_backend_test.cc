// NcclBackend on GPU memory, every collective through the Backend interface
// the executor uses: allreduce (every dtype x op, factors through PreMulSum
// and through a scale pass, in place), allgatherv and reducescatter with
// equal and uneven counts (zeros too, in place), broadcast from every root,
// alltoallv with uneven splits and exchange_counts, barrier, and the
// argument errors. Inputs are uploaded from support/reference's buffers and
// results downloaded after the work is done; every rank computes the
// expected result from every rank's input on the host, independently of
// NCCL. Without a GPU per rank every test skips, saying why (here, on
// machines without a GPU, it only proves that the test builds).
// abort() and the timeout: nccl_abort_test.cc.
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

TEST_F(NcclBackendTest, ServesItsOwnGpuOnly) {
  EXPECT_STREQ(backend().name(), "nccl");
  EXPECT_TRUE(backend().supports(chorus::Device::cuda(rank())));
  EXPECT_FALSE(backend().supports(chorus::Device::cuda(rank() + 1)));
  EXPECT_FALSE(backend().supports(chorus::Device::cpu()));
  EXPECT_EQ(backend().device_ops(chorus::Device::cuda(rank())), &device());
  EXPECT_FALSE(backend().fuses_in_place(kCount, DataType::kFloat32, ReduceOp::kSum));
  EXPECT_EQ(backend().rank(), rank());
  EXPECT_EQ(backend().size(), size());
}

TEST_F(NcclBackendTest, AllreducesEveryDtypeWithEveryOp) {
  const double average = 1.0 / size();
  int index = 0;
  for (DataType dtype : numeric_dtypes()) {
    if (!backend().check_reduction(dtype).ok()) continue;  // int16, uint16: RefusesWhatNcclCannotDo
    for (ReduceOp op : all_reduce_ops()) {
      if (op == ReduceOp::kAverage) continue;  // the executor's: a sum and a factor
      std::vector<double> factors = {1.0};
      if (chorus::is_floating_point(dtype)) {
        // PreMulSum (exact factors) and the scale pass (1/3 for 16-bit).
        factors = op == ReduceOp::kSum ? std::vector<double>{1.0, average, 0.5, 1.0 / 3} : std::vector<double>{1.0, 0.5};
      }
      for (double factor : factors) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(describe(dtype, op, factor) + (in_place ? " in place" : ""));
          const Values values = op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
          const std::vector<Buffer> inputs = make_inputs(dtype, {kCount}, size(), ++index, kSeed, values);
          const Buffer& mine = inputs[static_cast<size_t>(rank())];
          std::shared_ptr<void> input = upload(mine);
          std::shared_ptr<void> output = in_place ? input : upload(Buffer(dtype, {kCount}));
          ASSERT_TRUE(done(backend().allreduce(input.get(), output.get(), kCount, dtype, op, factor)));
          EXPECT_TRUE(matches(download(output.get(), dtype, kCount).tensor(),
                              reference_reduce(inputs, op, 1.0, factor)));
        }
      }
    }
  }
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

TEST_F(NcclBackendTest, AllgathersEvenAndUnevenCounts) {
  int index = 100;
  for (int variant = 0; variant < 3; ++variant) {
    // Equal (ncclAllGather), uneven with an empty rank (broadcasts), none.
    std::vector<int64_t> counts(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) counts[static_cast<size_t>(r)] = variant == 0 ? 5 : variant == 1 ? (r * 7) % 4 : 0;
    if (variant == 1 && size() == 1) counts[0] = 3;
    for (DataType dtype : all_dtypes()) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + " variant " + std::to_string(variant) +
                     (in_place ? " in place" : ""));
        ++index;
        std::vector<Buffer> inputs;
        for (int r = 0; r < size(); ++r) {
          inputs.push_back(make_input(dtype, {counts[static_cast<size_t>(r)]}, r, index, kSeed));
        }
        const Buffer expected = reference_allgather(inputs);
        const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
        const int64_t before = std::accumulate(counts.begin(), counts.begin() + rank(), int64_t{0});
        std::shared_ptr<void> output = upload(Buffer(dtype, {total}));
        std::shared_ptr<void> own;
        const void* input = nullptr;
        const size_t element = chorus::dtype_size(dtype);
        const Buffer& mine = inputs[static_cast<size_t>(rank())];
        if (in_place) {  // this rank's block already in its slot of the output
          if (mine.bytes() > 0) {
            void* slot = static_cast<char*>(output.get()) + static_cast<size_t>(before) * element;
            ASSERT_TRUE(device().from_host(slot, mine.data(), mine.bytes()).ok());
          }
          input = static_cast<char*>(output.get()) + static_cast<size_t>(before) * element;
        } else {
          own = upload(mine);
          input = own.get();
        }
        ASSERT_TRUE(done(backend().allgatherv(input, output.get(), counts, dtype)));
        EXPECT_TRUE(same_bytes(download(output.get(), dtype, total).tensor(), expected));
      }
    }
  }
}

TEST_F(NcclBackendTest, BroadcastsFromEveryRoot) {
  for (int root = 0; root < size(); ++root) {
    for (DataType dtype : {DataType::kBool, DataType::kBFloat16, DataType::kFloat64}) {
      SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + " from rank " + std::to_string(root));
      const Buffer sent = make_input(dtype, {kCount + 3}, root, 200 + root, kSeed);
      const Buffer garbage = make_input(dtype, {kCount + 3}, rank() + 17, 300 + root, kSeed);
      std::shared_ptr<void> buffer = upload(rank() == root ? sent : garbage);
      ASSERT_TRUE(done(backend().broadcast(buffer.get(), static_cast<int64_t>(sent.bytes()), root)));
      EXPECT_TRUE(same_bytes(download(buffer.get(), dtype, kCount + 3).tensor(), sent));
    }
  }
}

TEST_F(NcclBackendTest, AlltoallsUnevenSplits) {
  int index = 400;
  for (DataType dtype : all_dtypes()) {
    SCOPED_TRACE(chorus::dtype_name(dtype));
    ++index;
    std::vector<std::vector<int64_t>> splits;
    std::vector<Buffer> inputs;
    for (int r = 0; r < size(); ++r) {
      splits.push_back(alltoall_splits(r, size(), kSeed + static_cast<uint64_t>(index)));
      const int64_t rows = std::accumulate(splits.back().begin(), splits.back().end(), int64_t{0});
      inputs.push_back(make_input(dtype, {rows}, r, index, kSeed));
    }
    const AlltoallResult expected = reference_alltoall(inputs, splits, rank());
    const std::vector<int64_t>& send_counts = splits[static_cast<size_t>(rank())];
    std::vector<int64_t> recv_counts;
    ASSERT_TRUE(is_ok(backend().exchange_counts(send_counts, &recv_counts)));
    EXPECT_EQ(recv_counts, expected.received_splits);
    const int64_t received = std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0});
    std::shared_ptr<void> input = upload(inputs[static_cast<size_t>(rank())]);
    std::shared_ptr<void> output = upload(Buffer(dtype, {received}));
    ASSERT_TRUE(done(backend().alltoallv(input.get(), send_counts, output.get(), recv_counts, dtype)));
    EXPECT_TRUE(same_bytes(download(output.get(), dtype, received).tensor(), expected.output));
  }
}

TEST_F(NcclBackendTest, ReducescattersEqualAndUnevenBlocksInPlaceToo) {
  int index = 500;
  for (int variant = 0; variant < 2; ++variant) {
    // Equal blocks (ncclReduceScatter), then uneven with an empty block and
    // this rank's block not first (grouped ncclReduce).
    std::vector<int64_t> counts(static_cast<size_t>(size()));
    for (int r = 0; r < size(); ++r) counts[static_cast<size_t>(r)] = variant == 0 ? 300 : (r == 0 ? 0 : 100 * r + 7);
    if (variant == 1 && size() == 1) counts[0] = 123;
    const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    const int64_t before = std::accumulate(counts.begin(), counts.begin() + rank(), int64_t{0});
    const int64_t mine = counts[static_cast<size_t>(rank())];
    for (DataType dtype : {DataType::kInt32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        const double factor = chorus::is_floating_point(dtype) && op == ReduceOp::kSum ? 1.0 / 3 : 1.0;
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(describe(dtype, op, factor) + " variant " + std::to_string(variant) +
                       (in_place ? " in place" : ""));
          const std::vector<Buffer> inputs = make_inputs(dtype, {total}, size(), ++index, kSeed);
          const std::vector<double> reduced = reference_reduce(inputs, op, 1.0, factor);
          const std::vector<double> expected(reduced.begin() + before, reduced.begin() + before + mine);
          std::shared_ptr<void> input = upload(inputs[static_cast<size_t>(rank())]);
          std::shared_ptr<void> output = in_place ? input : upload(Buffer(dtype, {mine}));
          ASSERT_TRUE(done(backend().reducescatter(input.get(), output.get(), counts, dtype, op, factor)));
          EXPECT_TRUE(matches(download(output.get(), dtype, mine).tensor(), expected));
        }
      }
    }
  }
}

TEST_F(NcclBackendTest, BarrierAndEmptyCollectivesFinish) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(done(backend().barrier()));
  EXPECT_TRUE(done(backend().allreduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 0.5)));
  EXPECT_TRUE(done(backend().broadcast(nullptr, 0, 0)));
  const std::vector<int64_t> zeros(static_cast<size_t>(size()), 0);
  EXPECT_TRUE(done(backend().allgatherv(nullptr, nullptr, zeros, DataType::kInt8)));
  EXPECT_TRUE(done(backend().alltoallv(nullptr, zeros, nullptr, zeros, DataType::kInt8)));
  EXPECT_TRUE(done(backend().reducescatter(nullptr, nullptr, zeros, DataType::kInt8, ReduceOp::kMin, 1.0)));
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
