// The runtime over the NCCL backend: tensors in GPU memory through the
// public API, the backend registered with nccl_backend_maker (as
// MpiCommunication::start will register it) through detail::init_with_backends.
// The executor packs and unpacks fused tensors on the CudaDevice's stream,
// NCCL reduces there, and handles complete once the stream is past them;
// every result is copied back once its handle is done (or its completion
// event is) and checked against the independent reference. Skips, saying
// why, without a GPU per rank.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ops/nccl/nccl_backend.h"
#include "runtime/init_with_backends.h"
#include "support/device_runtime_allreduces.h"
#include "support/harness.h"
#include "support/nccl_job.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;

constexpr uint64_t kSeed = 0x9cc12;

// Chorus over NCCL on cuda:<world rank>, for one test.
class GpuRuntime {
 public:
  explicit GpuRuntime(std::vector<std::pair<std::string, const char*>> env = {}) : env_(std::move(env)) {
    const int gpu = world_rank();
    started_ = thrown_by([&] { chorus::detail::init_with_backends({chorus::nccl_backend_maker(gpu)}); });
  }
  ~GpuRuntime() {
    shutdown_chorus();
    for (void* memory : owned_) cudaFree(memory);
  }
  const chorus::Status& started() const { return started_; }
  chorus::Device device() const { return chorus::Device::cuda(world_rank()); }

  // `buffer`'s bytes in new GPU memory (cudaMemcpy has finished when it
  // returns: no producer event needed), as a tensor on the GPU.
  chorus::Tensor upload(const Buffer& buffer) {
    void* memory = nullptr;
    EXPECT_EQ(cudaMalloc(&memory, std::max<size_t>(buffer.bytes(), 1)), cudaSuccess);
    owned_.push_back(memory);
    EXPECT_EQ(cudaMemcpy(memory, buffer.data(), buffer.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    return chorus::Tensor(memory, buffer.dtype(), buffer.shape(), device());
  }
  // A GPU tensor's contents, once its handle (or completion event) is done.
  static Buffer download(const chorus::Tensor& tensor) {
    Buffer out(tensor.dtype, tensor.shape);
    EXPECT_EQ(cudaMemcpy(out.data(), tensor.data, out.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  ScopedEnv env_;
  chorus::Status started_;
  std::vector<void*> owned_;
};

class NcclRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string shortage = gpu_shortage();
    if (!shortage.empty()) GTEST_SKIP() << shortage;
  }
};

// Allreduces of several dtypes and ops submitted together (fused when the
// threshold allows), each against the reference.
void expect_allreduces(GpuRuntime& rt, const std::string& prefix) {
  std::vector<AllreduceCase> cases = common_allreduce_cases();
  cases.insert(cases.end(), {{DataType::kUInt8, ReduceOp::kMin},
                             {DataType::kInt8, ReduceOp::kProduct},
                             // Integers scaled as Horovod does (the CUDA kernel of integer_scale.h).
                             {DataType::kInt32, ReduceOp::kSum, 0.5, 3},
                             {DataType::kInt64, ReduceOp::kAverage, 3, 0.7}});
  chorus_test::expect_allreduces(
      prefix, cases, {chorus::Shape{5}, chorus::Shape{33, 7}, chorus::Shape{0}}, kSeed,
      [&](const Buffer& b) { return rt.upload(b); }, [](const chorus::Tensor& t) { return GpuRuntime::download(t); });
}

TEST_F(NcclRuntimeTest, AllreducesFusedAndAloneGiveTheReferenceResults) {
  GpuRuntime rt;
  ASSERT_TRUE(is_ok(rt.started()));
  EXPECT_TRUE(chorus::supports(rt.device()));
  expect_allreduces(rt, "fused");
  const auto inputs = make_inputs(DataType::kFloat32, {1 << 20}, world_size(), 99, kSeed);
  for (int i = 0; i < 3; ++i) {
    chorus::Tensor t = rt.upload(inputs[world_rank()]);
    chorus::allreduce("alone", t, allreduce_options(ReduceOp::kSum));
    EXPECT_TRUE(matches(GpuRuntime::download(t).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  }
}

TEST_F(NcclRuntimeTest, AllreducesWithFusionOff) {
  GpuRuntime rt(std::vector<std::pair<std::string, const char*>>{{"CHORUS_FUSION_THRESHOLD", "0"}});
  ASSERT_TRUE(is_ok(rt.started()));
  expect_allreduces(rt, "unfused");
}

TEST_F(NcclRuntimeTest, GatherBroadcastScatterExchangeAndBarrier) {
  GpuRuntime rt;
  ASSERT_TRUE(is_ok(rt.started()));
  const int rank = world_rank(), size = world_size();
  std::vector<Buffer> rows;
  for (int r = 0; r < size; ++r) rows.push_back(make_input(DataType::kInt32, {2 + r % 2, 3}, r, 1, kSeed));
  Handle ag = chorus::allgather("gather", rt.upload(rows[rank]));
  EXPECT_EQ(ag.output().device, rt.device());
  EXPECT_TRUE(same_bytes(GpuRuntime::download(ag.output()).tensor(), reference_allgather(rows)));
  const auto sent = make_inputs(DataType::kBool, {17}, size, 2, kSeed);
  chorus::Tensor b = rt.upload(sent[rank]);
  chorus::broadcast("bcast", b, size - 1);
  EXPECT_TRUE(same_bytes(GpuRuntime::download(b).tensor(), sent[size - 1]));
  const auto scattered = make_inputs(DataType::kFloat32, {2 * size + 1, 4}, size, 3, kSeed);
  Handle rs = chorus::reducescatter("scatter", rt.upload(scattered[rank]), ReduceOp::kSum);
  EXPECT_TRUE(matches(GpuRuntime::download(rs.output()).tensor(),
                      reference_reducescatter(scattered, ReduceOp::kSum, rank)));
  std::vector<std::vector<int64_t>> splits;
  std::vector<Buffer> a2a_in;
  for (int r = 0; r < size; ++r) {
    splits.push_back(alltoall_splits(r, size, kSeed));
    int64_t total = 0;
    for (int64_t s : splits.back()) total += s;
    a2a_in.push_back(make_input(DataType::kInt64, {total, 2}, r, 4, kSeed));
  }
  Handle a2a = chorus::alltoall("exchange", rt.upload(a2a_in[rank]), splits[rank]);
  const AlltoallResult expected = reference_alltoall(a2a_in, splits, rank);
  EXPECT_TRUE(same_bytes(GpuRuntime::download(a2a.output()).tensor(), expected.output));
  EXPECT_EQ(a2a.received_splits(), expected.received_splits);
  EXPECT_NO_THROW(chorus::barrier());
}

// NCCL has no 16-bit integer type: reductions of int16/uint16 are refused at
// submission on every rank (nothing is left in flight), while the
// collectives that move data move them; reducescatter's factors apply on
// the GPU too.
TEST_F(NcclRuntimeTest, SixteenBitIntegersMoveButAreNotReducedAndReducescatterScales) {
  GpuRuntime rt;
  ASSERT_TRUE(is_ok(rt.started()));
  const int rank = world_rank(), size = world_size();
  for (DataType dtype : {DataType::kInt16, DataType::kUInt16}) {
    const std::string name = std::string("int16.") + chorus::dtype_name(dtype);
    const auto rows = make_inputs(dtype, {2 * size, 3}, size, 20, kSeed);
    chorus::Tensor t = rt.upload(rows[rank]);
    const std::string refused = "'" + name + ".r': the NCCL backend cannot reduce " + chorus::dtype_name(dtype) +
                                " tensors (NCCL has no 16-bit integer type";
    EXPECT_THAT(thrown_by([&] { (void)chorus::allreduce_async(name + ".r", t); }).message(),
                ::testing::HasSubstr(refused));
    EXPECT_THAT(thrown_by([&] { (void)chorus::reducescatter_async(name + ".r", t); }).message(),
                ::testing::HasSubstr(refused));
    Handle ag = chorus::allgather(name + ".gather", t);
    EXPECT_TRUE(same_bytes(GpuRuntime::download(ag.output()).tensor(), reference_allgather(rows)));
    chorus::Tensor b = rt.upload(rows[rank]);
    chorus::broadcast(name + ".bcast", b, size - 1);
    EXPECT_TRUE(same_bytes(GpuRuntime::download(b).tensor(), rows[size - 1]));
  }
  for (DataType dtype : {DataType::kFloat32, DataType::kInt32}) {
    const auto scattered = make_inputs(dtype, {2 * size + 1, 4}, size, 21, kSeed);
    chorus::ReducescatterOptions options;
    options.op = ReduceOp::kAverage;
    options.prescale_factor = 0.5;
    options.postscale_factor = 3.0;
    Handle rs = chorus::reducescatter(std::string("scaled.rs.") + chorus::dtype_name(dtype),
                                      rt.upload(scattered[rank]), options);
    EXPECT_TRUE(matches(GpuRuntime::download(rs.output()).tensor(),
                        reference_reducescatter(scattered, options.op, rank, 0.5, 3.0)));
  }
}

// The input is written on a producer stream that is held back ~50 ms; the
// collective must start after the producer's event, not before.
TEST_F(NcclRuntimeTest, CollectiveStartsAfterItsInputsProducer) {
  GpuRuntime rt;
  ASSERT_TRUE(is_ok(rt.started()));
  const auto inputs = make_inputs(DataType::kFloat32, {4096}, world_size(), 7, kSeed);
  chorus::Tensor t = rt.upload(Buffer(DataType::kFloat32, {4096}));  // zeros until produced
  cudaStream_t producer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(producer, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); },
                               nullptr),
            cudaSuccess);
  const Buffer& mine = inputs[world_rank()];
  ASSERT_EQ(cudaMemcpyAsync(t.data, mine.data(), mine.bytes(), cudaMemcpyHostToDevice, producer), cudaSuccess);
  std::shared_ptr<const chorus::CudaEvent> produced;
  ASSERT_TRUE(is_ok(chorus::CudaEvent::record(producer, &produced)));
  t.ready = produced;
  chorus::allreduce("produced", t, allreduce_options(ReduceOp::kSum));
  EXPECT_TRUE(matches(GpuRuntime::download(t).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  cudaStreamDestroy(producer);
}

TEST_F(NcclRuntimeTest, CompletionEventCoversTheResult) {
  GpuRuntime rt;
  ASSERT_TRUE(is_ok(rt.started()));
  const auto inputs = make_inputs(DataType::kFloat64, {1 << 16}, world_size(), 8, kSeed);
  chorus::Tensor t = rt.upload(inputs[world_rank()]);
  Handle handle = chorus::allreduce_async("evented", t, allreduce_options(ReduceOp::kSum));
  const std::shared_ptr<const chorus::Event> finished = handle.completion_event();
  ASSERT_NE(finished, nullptr);
  finished->synchronize();
  EXPECT_TRUE(matches(GpuRuntime::download(t).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  EXPECT_DONE(handle);
}

TEST_F(NcclRuntimeTest, HostAndGpuCollectivesInOneCycle) {
  GpuRuntime rt;
  ASSERT_TRUE(is_ok(rt.started()));
  const auto inputs = make_inputs(DataType::kFloat32, {300}, world_size(), 9, kSeed);
  Buffer host = inputs[world_rank()];
  chorus::Tensor gpu = rt.upload(inputs[world_rank()]);
  Handle on_gpu = chorus::allreduce_async("mixed.gpu", gpu, allreduce_options(ReduceOp::kSum));
  Handle on_host = chorus::allreduce_async("mixed.host", host.tensor(), allreduce_options(ReduceOp::kSum));
  EXPECT_DONE(on_host);
  EXPECT_DONE(on_gpu);
  EXPECT_TRUE(matches(host.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  EXPECT_TRUE(matches(GpuRuntime::download(gpu).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
}

// Runs where a rank lacks its GPU (here: no GPU at all): the ranks agree on
// the set-up's outcome, so init() fails on every rank, naming the ranks,
// rather than leaving the others waiting in NCCL for the one that failed.
TEST(NcclRuntimeSetup, InitFailsOnEveryRankWhenARankHasNoGpu) {
  if (gpu_shortage().empty()) GTEST_SKIP() << "every rank has a GPU of its own here";
  const int gpu = world_rank();
  const chorus::Status status =
      thrown_by([&] { chorus::detail::init_with_backends({chorus::nccl_backend_maker(gpu)}); });
  shutdown_chorus();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), ::testing::HasSubstr("setting up the NCCL backend: preparing CUDA device"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr(" failed on rank"));
  std::printf("[rank %d] %s\n", world_rank(), status.message().c_str());
}

}  // namespace
}  // namespace chorus_test
