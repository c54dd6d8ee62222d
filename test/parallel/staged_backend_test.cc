// The host-staged GPU backend (ops/gpu/staged_backend.h) beyond the Backend
// contract (its devices, every collective against the host reference,
// refusals: the "staged" row of backend_contract_test.cc): reductions on
// device memory against the same reduction run by the host's MPI backend on
// the same data in host memory. The staged backend runs that very backend
// on its staging buffers, so the bits must be identical: for every dtype and
// op, with factors, in place and not, on values whose sums round; several
// collectives queued before any is waited for (one staging pair serves them
// in stream order), a message that makes the staging buffers grow behind
// queued work, the executor's device operations before and after a
// collective on the stream, and abort(). The runtime over it:
// staged_runtime_test.cc.
//
// Needs a GPU on every rank (ranks may share one); elsewhere each test is
// skipped, saying why, and ctest reports the run as skipped.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_device.h"
#include "ops/gpu/staged_backend.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "support/staged_gpu.h"
#endif

namespace chorus_test {
namespace {

#ifndef CHORUS_WITH_CUDA

TEST(StagedBackend, NeedsCuda) { GTEST_SKIP() << "this build has no CUDA (CHORUS_WITH_CUDA=OFF)"; }

#else

using chorus::Backend;
using chorus::DataType;
using chorus::ReduceOp;
using chorus::Status;
using Bytes = std::vector<unsigned char>;

// `rank`'s input as raw bytes: floats at full precision (results depend on
// how they are rounded), products' factors that cannot overflow.
Bytes random_bytes(DataType dtype, int64_t count, int rank, uint64_t seed, Values values = Values::kRandom) {
  if (count == 0) return {};
  Buffer buffer = make_input(dtype, {count}, rank, static_cast<int>(seed % 1000), seed, values);
  const auto* at = static_cast<const unsigned char*>(buffer.data());
  return Bytes(at, at + buffer.bytes());
}

class StagedBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int visible = 0;
    const std::string why = why_no_gpu(&visible);
    if (!why.empty()) GTEST_SKIP() << "no GPU for the staged backend: " << why;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ASSERT_TRUE(types_.create().ok());
    MPI_Comm_dup(MPI_COMM_WORLD, &staged_comm_);
    MPI_Comm_dup(MPI_COMM_WORLD, &host_comm_);
    std::unique_ptr<chorus::CudaDevice> device;
    const Status created = chorus::CudaDevice::create(host_local_rank() % visible, &device);
    ASSERT_TRUE(created.ok()) << created.to_string();
    device_ = device.get();
    staged_ = std::make_unique<chorus::StagedBackend>(
        std::move(device), std::make_unique<chorus::MpiBackend>(staged_comm_, &types_), rank_);
    host_ = std::make_unique<chorus::MpiBackend>(host_comm_, &types_);
  }
  void TearDown() override {
    staged_.reset();
    host_.reset();
    if (staged_comm_ != MPI_COMM_NULL) MPI_Comm_free(&staged_comm_);
    if (host_comm_ != MPI_COMM_NULL) MPI_Comm_free(&host_comm_);
    types_.destroy();
  }

  void upload(const DeviceBytes& to, const Bytes& from) {
    if (!from.empty()) {
      ASSERT_EQ(cudaMemcpy(to.data, from.data(), from.size(), cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  Bytes download(const DeviceBytes& from, size_t bytes) {
    Bytes out(bytes);
    if (bytes > 0) {
      EXPECT_EQ(cudaMemcpy(out.data(), from.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
  }
  static void expect_done(chorus::WorkPtr work) {
    ASSERT_NE(work, nullptr);
    const Status status = work->wait();
    EXPECT_TRUE(status.ok()) << status.to_string();
    EXPECT_TRUE(work->test());
  }

  // One allreduce on device memory against the host's, the same bits.
  void expect_allreduce(DataType dtype, ReduceOp op, double factor, int64_t count, bool in_place, uint64_t seed) {
    SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + " " + chorus::reduce_op_name(op) + " factor " +
                 std::to_string(factor) + " count " + std::to_string(count) + (in_place ? " in place" : ""));
    const Bytes input =
        random_bytes(dtype, count, rank_, seed, op == ReduceOp::kProduct ? Values::kProduct : Values::kRandom);
    Bytes expected = input;
    expect_done(host_->allreduce(expected.data(), expected.data(), count, dtype, op, factor));
    DeviceBytes in(input.size()), out(input.size());
    upload(in, input);
    expect_done(staged_->allreduce(in.data, in_place ? in.data : out.data, count, dtype, op, factor));
    EXPECT_EQ(download(in_place ? in : out, input.size()), expected);
    if (!in_place) {
      EXPECT_EQ(download(in, input.size()), input) << "the input must stay as it was";
    }
  }

  int rank_ = 0;
  int size_ = 1;
  chorus::MpiTypes types_;
  MPI_Comm staged_comm_ = MPI_COMM_NULL;
  MPI_Comm host_comm_ = MPI_COMM_NULL;
  chorus::CudaDevice* device_ = nullptr;
  std::unique_ptr<Backend> staged_;
  std::unique_ptr<Backend> host_;
};

TEST_F(StagedBackendTest, AllreduceEveryDtypeAndOpGivesTheHostsBits) {
  uint64_t seed = 1;
  for (DataType dtype : numeric_dtypes()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (bool in_place : {false, true}) expect_allreduce(dtype, op, 1.0, 1001, in_place, ++seed);
    }
    if (chorus::is_floating_point(dtype)) {
      expect_allreduce(dtype, ReduceOp::kSum, 1.0 / size_, 777, true, ++seed);  // an average
      expect_allreduce(dtype, ReduceOp::kSum, 0.25 / size_, 777, false, ++seed);
    }
  }
  expect_allreduce(DataType::kFloat32, ReduceOp::kSum, 1.0, 0, false, ++seed);
}

TEST_F(StagedBackendTest, CollectivesQueuedTogetherAndAStagingBufferThatGrowsBehindThem) {
  // Queued without waiting: each reuses the staging buffers the one before
  // it used, and the last needs larger ones than any before.
  const std::vector<int64_t> counts = {100, 3000, 17, 3 << 20};
  std::vector<Bytes> expected;
  std::vector<std::unique_ptr<DeviceBytes>> buffers;
  std::vector<chorus::WorkPtr> works;
  uint64_t seed = 100;
  for (int64_t count : counts) {
    const Bytes input = random_bytes(DataType::kFloat32, count, rank_, ++seed);
    Bytes reduced = input;
    expect_done(host_->allreduce(reduced.data(), reduced.data(), count, DataType::kFloat32, ReduceOp::kSum, 0.5));
    expected.push_back(reduced);
    buffers.push_back(std::make_unique<DeviceBytes>(input.size()));
    upload(*buffers.back(), input);
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    works.push_back(staged_->allreduce(buffers[i]->data, buffers[i]->data, counts[i], DataType::kFloat32,
                                       ReduceOp::kSum, 0.5));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    SCOPED_TRACE("collective " + std::to_string(i));
    expect_done(std::move(works[i]));
    EXPECT_EQ(download(*buffers[i], expected[i].size()), expected[i]);
  }
}

TEST_F(StagedBackendTest, StaysInStreamOrderWithTheDevicesOwnWork) {
  // What the executor does: pack (a device copy) and prescale, reduce,
  // unpack, all queued before anything is waited for.
  const int64_t count = 4096;
  const Bytes input = random_bytes(DataType::kFloat32, count, rank_, 7);
  Bytes expected(input.size());
  std::vector<float> scaled(static_cast<size_t>(count));
  std::memcpy(scaled.data(), input.data(), input.size());
  for (float& v : scaled) v *= 2.0f;
  std::memcpy(expected.data(), scaled.data(), expected.size());
  expect_done(host_->allreduce(expected.data(), expected.data(), count, DataType::kFloat32, ReduceOp::kSum, 1.0));

  DeviceBytes tensor(input.size()), fusion(input.size()), result(input.size());
  upload(tensor, input);
  chorus::DeviceOps* ops = staged_->device_ops(chorus::Device::cuda(device_->index()));
  ASSERT_TRUE(ops->copy({{fusion.data, tensor.data, input.size()}}).ok());
  ASSERT_TRUE(ops->scale(fusion.data, fusion.data, count, DataType::kFloat32, 2.0).ok());
  chorus::WorkPtr work = staged_->allreduce(fusion.data, fusion.data, count, DataType::kFloat32, ReduceOp::kSum, 1.0);
  ASSERT_TRUE(ops->copy({{result.data, fusion.data, input.size()}}).ok());
  const auto unpacked = ops->record();
  expect_done(std::move(work));
  unpacked->synchronize();
  EXPECT_EQ(download(result, input.size()), expected);
}

TEST_F(StagedBackendTest, ReducescatterWithFactorsSkewedAndInPlace) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32}) {
    for (bool in_place : {false, true}) {
      SCOPED_TRACE(std::string(chorus::dtype_name(dtype)) + (in_place ? " in place" : ""));
      std::vector<int64_t> counts;
      for (int r = 0; r < size_; ++r) counts.push_back(10 + 13 * r);
      int64_t total = 0;
      for (int64_t c : counts) total += c;
      const double factor = chorus::is_floating_point(dtype) ? 1.0 / size_ : 1.0;
      const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(rank_)]) * chorus::dtype_size(dtype);
      const Bytes input = random_bytes(dtype, total, rank_, 41);
      Bytes expected(mine);
      expect_done(host_->reducescatter(input.data(), expected.data(), counts, dtype, ReduceOp::kSum, factor));
      DeviceBytes in(input.size()), out(mine);
      upload(in, input);
      expect_done(staged_->reducescatter(in.data, in_place ? in.data : out.data, counts, dtype, ReduceOp::kSum,
                                         factor));
      EXPECT_EQ(download(in_place ? in : out, mine), expected);
    }
  }
}

// abort() ends the wait for a collective whose peers do not come (rank 0's
// allreduce, which the others join only afterwards), and fails later ones
// at once; the one already inside MPI completes once the peers join.
TEST_F(StagedBackendTest, AbortEndsTheWaitForPeersThatDoNotCome) {
  const int64_t count = 1024;
  const Bytes input = random_bytes(DataType::kFloat32, count, rank_, 51);
  DeviceBytes buffer(input.size());
  upload(buffer, input);
  if (rank_ == 0) {
    chorus::WorkPtr waiting =
        staged_->allreduce(buffer.data, buffer.data, count, DataType::kFloat32, ReduceOp::kSum, 1.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(waiting->test()) << "the other ranks have not joined yet";
    staged_->abort("the test's peers are late");
    const auto start = std::chrono::steady_clock::now();
    const Status status = waiting->wait();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
    EXPECT_EQ(status.code(), chorus::StatusCode::kAborted);
    EXPECT_EQ(status.message(), "the staged GPU backend was aborted: the test's peers are late");
    EXPECT_TRUE(waiting->test());
    const Status later = staged_->barrier()->wait();
    EXPECT_EQ(later.message(), status.message());
    std::vector<int64_t> received;
    EXPECT_EQ(staged_->exchange_counts(std::vector<int64_t>(static_cast<size_t>(size_), 1), &received).message(),
              status.message());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank_ != 0) {
    expect_done(staged_->allreduce(buffer.data, buffer.data, count, DataType::kFloat32, ReduceOp::kSum, 1.0));
  } else {
    // The host function that was inside MPI ends now that the peers came.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (cudaStreamQuery(device_->stream()) == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(cudaStreamQuery(device_->stream()), cudaSuccess);
  }
}

#endif  // CHORUS_WITH_CUDA

}  // namespace
}  // namespace chorus_test
