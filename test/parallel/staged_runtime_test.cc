// The runtime over the host-staged GPU backend, through the public API, the
// way a program gets it: chorus::init() binds each rank to its GPU
// (local rank modulo the GPUs it sees, so ranks may share one) and, with
// CHORUS_GPU_BACKEND=staged, registers the staged backend whatever the
// machine. The executor packs and unpacks fused GPU tensors on the
// CudaDevice's stream, the staged backend reduces through host memory, and
// handles complete once the stream is past it all; every result is copied
// back once its handle (or completion event) is done and checked against
// the independent reference.
//
// Needs a GPU on every rank; elsewhere each test is skipped, saying why, and
// ctest reports the run as skipped.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/device_runtime_allreduces.h"
#include "support/harness.h"
#include "support/reference.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "chorus/cuda.h"
#include "support/staged_gpu.h"
#endif

namespace chorus_test {
namespace {

#ifndef CHORUS_WITH_CUDA

TEST(StagedRuntime, NeedsCuda) { GTEST_SKIP() << "this build has no CUDA (CHORUS_WITH_CUDA=OFF)"; }

#else

using chorus::AllreduceOptions;
using chorus::Handle;

constexpr uint64_t kSeed = 0x57a9ed;

// Chorus over the staged backend, for one test; `env` adds settings.
class StagedRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int visible = 0;
    const std::string why = why_no_gpu(&visible);
    if (!why.empty()) GTEST_SKIP() << "no GPU for the staged backend: " << why;
    gpu_ = chorus::Device::cuda(host_local_rank() % visible);
  }
  void start(std::vector<std::pair<std::string, const char*>> env = {}) {
    env.emplace_back("CHORUS_GPU_BACKEND", "staged");
    env_ = std::make_unique<ScopedEnv>(std::move(env));
    ASSERT_TRUE(init_chorus());
    ASSERT_TRUE(chorus::supports(gpu_));
  }
  void TearDown() override {
    shutdown_chorus();
    env_.reset();
  }

  // `buffer`'s bytes in new GPU memory (cudaMemcpy has finished when it
  // returns: no producer event needed), as a tensor on the rank's GPU.
  chorus::Tensor upload(const Buffer& buffer) {
    memory_.push_back(std::make_unique<DeviceBytes>(buffer.bytes()));
    if (buffer.bytes() > 0) {
      EXPECT_EQ(cudaMemcpy(memory_.back()->data, buffer.data(), buffer.bytes(), cudaMemcpyHostToDevice),
                cudaSuccess);
    }
    return chorus::Tensor(memory_.back()->data, buffer.dtype(), buffer.shape(), gpu_);
  }
  static Buffer download(const chorus::Tensor& tensor) {
    Buffer out(tensor.dtype, tensor.shape);
    if (out.bytes() > 0) {
      EXPECT_EQ(cudaMemcpy(out.data(), tensor.data, out.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
  }

  // Allreduces of several dtypes and ops submitted together (fused when the
  // threshold allows), each against the reference.
  void expect_allreduces(const std::string& prefix) {
    std::vector<AllreduceCase> cases = common_allreduce_cases();
    cases.insert(cases.end(), {{DataType::kUInt8, ReduceOp::kMin}, {DataType::kInt8, ReduceOp::kProduct}});
    chorus_test::expect_allreduces(
        prefix, cases, {chorus::Shape{5}, chorus::Shape{33, 7}, chorus::Shape{0}}, kSeed,
        [&](const Buffer& b) { return upload(b); }, [](const chorus::Tensor& t) { return download(t); });
  }

  chorus::Device gpu_;
  std::unique_ptr<ScopedEnv> env_;
  std::vector<std::unique_ptr<DeviceBytes>> memory_;
};

TEST_F(StagedRuntimeTest, AllreducesFusedAndAloneGiveTheReferenceResults) {
  start();
  EXPECT_FALSE(chorus::supports(chorus::Device::cuda(gpu_.index + 64)));
  expect_allreduces("fused");
  // Larger than the staging buffers' first size: they grow.
  const auto inputs = make_inputs(DataType::kFloat32, {1 << 20}, world_size(), 99, kSeed);
  for (int i = 0; i < 2; ++i) {
    chorus::Tensor t = upload(inputs[static_cast<size_t>(world_rank())]);
    chorus::allreduce("alone", t, allreduce_options(ReduceOp::kSum));
    EXPECT_TRUE(matches(download(t).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  }
}

TEST_F(StagedRuntimeTest, AllreducesWithFusionOff) {
  start({{"CHORUS_FUSION_THRESHOLD", "0"}});
  expect_allreduces("unfused");
}

TEST_F(StagedRuntimeTest, GatherBroadcastScatterExchangeAndBarrier) {
  start();
  const int rank = world_rank(), size = world_size();
  std::vector<Buffer> rows;
  for (int r = 0; r < size; ++r) rows.push_back(make_input(DataType::kInt32, {2 + r % 2, 3}, r, 1, kSeed));
  Handle ag = chorus::allgather("gather", upload(rows[static_cast<size_t>(rank)]));
  EXPECT_EQ(ag.output().device, gpu_);
  EXPECT_TRUE(same_bytes(download(ag.output()).tensor(), reference_allgather(rows)));
  const auto sent = make_inputs(DataType::kBool, {17}, size, 2, kSeed);
  chorus::Tensor b = upload(sent[static_cast<size_t>(rank)]);
  chorus::broadcast("bcast", b, size - 1);
  EXPECT_TRUE(same_bytes(download(b).tensor(), sent[static_cast<size_t>(size - 1)]));
  const auto scattered = make_inputs(DataType::kFloat32, {2 * size + 1, 4}, size, 3, kSeed);
  Handle rs = chorus::reducescatter("scatter", upload(scattered[static_cast<size_t>(rank)]), ReduceOp::kAverage);
  EXPECT_TRUE(matches(download(rs.output()).tensor(), reference_reducescatter(scattered, ReduceOp::kAverage, rank)));
  std::vector<std::vector<int64_t>> splits;
  std::vector<Buffer> a2a_in;
  for (int r = 0; r < size; ++r) {
    splits.push_back(alltoall_splits(r, size, kSeed));
    int64_t total = 0;
    for (int64_t s : splits.back()) total += s;
    a2a_in.push_back(make_input(DataType::kInt64, {total, 2}, r, 4, kSeed));
  }
  const auto mine = static_cast<size_t>(rank);
  Handle a2a = chorus::alltoall("exchange", upload(a2a_in[mine]), splits[mine]);
  const AlltoallResult expected = reference_alltoall(a2a_in, splits, rank);
  EXPECT_TRUE(same_bytes(download(a2a.output()).tensor(), expected.output));
  EXPECT_EQ(a2a.received_splits(), expected.received_splits);
  EXPECT_NO_THROW(chorus::barrier());
}

// The input is written on a producer stream held back ~50 ms; the
// collective must start after the producer's event, and a consumer stream
// that waits for the completion event reads the result.
TEST_F(StagedRuntimeTest, ProducersAndConsumersOnOtherStreams) {
  start();
  const auto inputs = make_inputs(DataType::kFloat32, {4096}, world_size(), 7, kSeed);
  chorus::Tensor t = upload(Buffer(DataType::kFloat32, {4096}));  // zeros until produced
  cudaStream_t producer = nullptr;
  ASSERT_EQ(cudaSetDevice(gpu_.index), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(
                producer, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }, nullptr),
            cudaSuccess);
  const Buffer& mine = inputs[static_cast<size_t>(world_rank())];
  ASSERT_EQ(cudaMemcpyAsync(t.data, mine.data(), mine.bytes(), cudaMemcpyHostToDevice, producer), cudaSuccess);
  t.ready = chorus::cuda_event_on(producer);
  Handle handle = chorus::allreduce_async("produced", t, allreduce_options(ReduceOp::kSum));
  Buffer result(DataType::kFloat32, {4096});
  chorus::cuda_stream_wait(producer, handle.completion_event());
  ASSERT_EQ(cudaMemcpyAsync(result.data(), t.data, result.bytes(), cudaMemcpyDeviceToHost, producer), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(producer), cudaSuccess);
  EXPECT_TRUE(matches(result.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  EXPECT_DONE(handle);
  cudaStreamDestroy(producer);
}

#endif  // CHORUS_WITH_CUDA

}  // namespace
}  // namespace chorus_test
