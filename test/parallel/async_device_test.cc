// The runtime over the asynchronous test device (test/support/async_device/):
// tensors in its memory, collectives queued on its stream, work finishing
// after the executor has moved on. Every result is read back from the
// device and checked against the independent reference, so an executor that
// completed a handle before the device's work on it had finished, or started
// a collective before its input's producer was done, fails here: the device
// waits before each piece of work, and its fresh memory is garbage.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/init_with_backends.h"
#include "support/async_device/async_test_backend.h"
#include "support/device_runtime_allreduces.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using chorus::StatusCode;

constexpr uint64_t kSeed = 0xde71ce;

// Chorus with the test device, for one test: `delay` before each piece of
// the device's work; `env` for the runtime's settings.
class DeviceRuntime {
 public:
  explicit DeviceRuntime(std::chrono::microseconds delay = std::chrono::microseconds(300),
                         std::vector<std::pair<std::string, const char*>> env = {})
      : env_(std::move(env)) {
    const chorus::Status status =
        thrown_by([&] { chorus::detail::init_with_backends({async_test_backend(delay, &device_)}); });
    EXPECT_TRUE(is_ok(status));
  }
  ~DeviceRuntime() { shutdown_chorus(); }
  AsyncTestDevice& device() { return *device_; }

  // `buffer`'s bytes in new device memory, as a tensor of the device.
  chorus::Tensor upload(const Buffer& buffer) {
    std::shared_ptr<void> memory;
    EXPECT_TRUE(is_ok(device_->allocate(buffer.bytes(), &memory)));
    EXPECT_TRUE(is_ok(device_->from_host(memory.get(), buffer.data(), buffer.bytes())));
    owned_.push_back(memory);
    return chorus::Tensor(memory.get(), buffer.dtype(), buffer.shape(), device_->device());
  }
  // A device tensor's contents as they are now, read straight from the
  // device's memory (host memory here) without waiting for its stream: a
  // handle that is done promises its result is in place, and a runtime that
  // completed it before the device's work had finished is caught here.
  Buffer download(const chorus::Tensor& tensor) {
    Buffer out(tensor.dtype, tensor.shape);
    if (out.bytes() > 0) std::memcpy(out.data(), tensor.data, out.bytes());
    return out;
  }

 private:
  ScopedEnv env_;
  AsyncTestDevice* device_ = nullptr;
  std::vector<std::shared_ptr<void>> owned_;
};

// The cases every device passes (support/device_runtime_allreduces.h).
void expect_allreduces(DeviceRuntime& rt, const std::string& prefix) {
  chorus_test::expect_allreduces(
      prefix, common_allreduce_cases(), {chorus::Shape{5}, chorus::Shape{33, 7}, chorus::Shape{0}}, kSeed,
      [&](const Buffer& b) { return rt.upload(b); }, [&](const chorus::Tensor& t) { return rt.download(t); });
}

TEST(AsyncDevice, AllreducesFusedAndAloneGiveTheReferenceResults) {
  DeviceRuntime rt;
  expect_allreduces(rt, "fused");
  // One at a time: each waits for its own collective alone.
  const auto inputs = make_inputs(DataType::kFloat32, {1000}, world_size(), 99, kSeed);
  for (int i = 0; i < 3; ++i) {
    chorus::Tensor t = rt.upload(inputs[world_rank()]);
    chorus::allreduce("alone." + std::to_string(i), t, allreduce_options(ReduceOp::kSum));
    EXPECT_TRUE(matches(rt.download(t).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  }
}

TEST(AsyncDevice, AllreducesWithFusionOff) {
  DeviceRuntime rt(std::chrono::microseconds(300), {{"CHORUS_FUSION_THRESHOLD", "0"}});
  expect_allreduces(rt, "unfused");
}

TEST(AsyncDevice, GroupedAllreduceIntoSeparateOutputs) {
  DeviceRuntime rt;
  std::vector<chorus::Tensor> in, out;
  std::vector<std::vector<double>> expected;
  for (int i = 0; i < 4; ++i) {
    const auto inputs = make_inputs(DataType::kFloat32, {3 + i, 2}, world_size(), 40 + i, kSeed);
    expected.push_back(reference_reduce(inputs, ReduceOp::kAverage));
    in.push_back(rt.upload(inputs[world_rank()]));
    out.push_back(rt.upload(Buffer(DataType::kFloat32, {3 + i, 2})));
  }
  chorus::grouped_allreduce("group", in, out);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(matches(rt.download(out[i]).tensor(), expected[i])) << i;
}

TEST(AsyncDevice, GatherBroadcastScatterExchangeAndBarrier) {
  DeviceRuntime rt;
  const int rank = world_rank(), size = world_size();
  // allgather: the output is allocated in the device's memory.
  const auto gathered = make_inputs(DataType::kInt32, {2 + rank % 2, 3}, size, 1, kSeed);
  std::vector<Buffer> rows;
  for (int r = 0; r < size; ++r) rows.push_back(make_input(DataType::kInt32, {2 + r % 2, 3}, r, 1, kSeed));
  Handle ag = chorus::allgather("gather", rt.upload(rows[rank]));
  EXPECT_EQ(ag.output().device, chorus::Device::custom(0));
  EXPECT_TRUE(same_bytes(rt.download(ag.output()).tensor(), reference_allgather(rows)));
  // broadcast from the last rank.
  const auto sent = make_inputs(DataType::kFloat64, {17}, size, 2, kSeed);
  chorus::Tensor b = rt.upload(sent[rank]);
  chorus::broadcast("bcast", b, size - 1);
  EXPECT_TRUE(same_bytes(rt.download(b).tensor(), sent[size - 1]));
  // reducescatter.
  const auto scattered = make_inputs(DataType::kFloat32, {2 * size + 1, 4}, size, 3, kSeed);
  Handle rs = chorus::reducescatter("scatter", rt.upload(scattered[rank]), ReduceOp::kSum);
  EXPECT_TRUE(matches(rt.download(rs.output()).tensor(), reference_reducescatter(scattered, ReduceOp::kSum, rank)));
  // alltoall with uneven splits.
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
  EXPECT_TRUE(same_bytes(rt.download(a2a.output()).tensor(), expected.output));
  EXPECT_EQ(a2a.received_splits(), expected.received_splits);
  EXPECT_NO_THROW(chorus::barrier());
}

TEST(AsyncDevice, MismatchFailsEveryRankAndTheRuntimeGoesOn) {
  DeviceRuntime rt;
  Buffer input(DataType::kFloat32, {world_rank() == 1 ? 4 : 5});
  chorus::Tensor t = rt.upload(input);
  const chorus::Status status = finish(submit([&] { return chorus::allreduce_async("mm.device", t); }));
  EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
  expect_allreduces(rt, "after.mismatch");
}

TEST(AsyncDevice, CollectiveStartsAfterItsInputsProducer) {
  DeviceRuntime rt;
  // A producer stream, slower than the collective's, writes the input.
  AsyncTestDevice producer(chorus::Device::custom(1), std::chrono::milliseconds(30));
  const auto inputs = make_inputs(DataType::kFloat32, {256}, world_size(), 7, kSeed);
  chorus::Tensor t = rt.upload(Buffer(DataType::kFloat32, {256}));  // garbage until produced
  const Buffer& mine = inputs[world_rank()];
  producer.enqueue([&] {
    std::memcpy(t.data, mine.data(), mine.bytes());
    return chorus::Status::OK();
  });
  t.ready = producer.record();
  chorus::allreduce("produced", t, allreduce_options(ReduceOp::kSum));
  EXPECT_TRUE(matches(rt.download(t).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
}

TEST(AsyncDevice, CompletionEventCoversTheResult) {
  DeviceRuntime rt(std::chrono::milliseconds(2));
  const auto inputs = make_inputs(DataType::kFloat64, {64}, world_size(), 8, kSeed);
  chorus::Tensor t = rt.upload(inputs[world_rank()]);
  Handle handle = chorus::allreduce_async("evented", t, allreduce_options(ReduceOp::kSum));
  const std::shared_ptr<const chorus::Event> finished = handle.completion_event();
  ASSERT_NE(finished, nullptr);
  finished->synchronize();
  // Read the device's memory (host memory here) directly, not through its
  // stream: once the event is done, the result is in place.
  Buffer now(DataType::kFloat64, {64});
  std::memcpy(now.data(), t.data, now.bytes());
  EXPECT_TRUE(matches(now.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  EXPECT_DONE(handle);
}

TEST(AsyncDevice, HostAndDeviceCollectivesInOneCycle) {
  DeviceRuntime rt;
  const auto inputs = make_inputs(DataType::kFloat32, {300}, world_size(), 9, kSeed);
  Buffer host = inputs[world_rank()];
  chorus::Tensor device = rt.upload(inputs[world_rank()]);
  Handle on_device = chorus::allreduce_async("mixed.device", device, allreduce_options(ReduceOp::kSum));
  Handle on_host = chorus::allreduce_async("mixed.host", host.tensor(), allreduce_options(ReduceOp::kSum));
  EXPECT_DONE(on_host);
  EXPECT_DONE(on_device);
  EXPECT_TRUE(matches(host.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  EXPECT_TRUE(matches(rt.download(device).tensor(), reference_reduce(inputs, ReduceOp::kSum)));
}

TEST(AsyncDevice, ShutdownWithWorkInFlightEndsEveryHandle) {
  std::vector<Handle> handles;
  std::vector<chorus::Tensor> tensors;
  const auto inputs = make_inputs(DataType::kFloat32, {1024}, world_size(), 10, kSeed);
  {
    // A slow device: most of the work is still queued when shutdown() comes.
    DeviceRuntime rt(std::chrono::milliseconds(5), {{"CHORUS_FUSION_THRESHOLD", "0"}});
    for (int i = 0; i < 12; ++i) {
      tensors.push_back(rt.upload(inputs[world_rank()]));
      handles.push_back(chorus::allreduce_async("inflight." + std::to_string(i), tensors.back(), allreduce_options(ReduceOp::kSum)));
    }
    test_barrier();  // every rank has submitted before any leaves
  }  // shutdown(): negotiated work finishes on the device, the rest fails
  for (size_t i = 0; i < handles.size(); ++i) {
    const chorus::Status status = finish(handles[i], std::chrono::seconds(20));
    EXPECT_NE(status.code(), StatusCode::kTimeout) << i << ": still in flight after shutdown";
    EXPECT_TRUE(status.ok() || status.code() == StatusCode::kShutdown) << i << ": " << status.message();
  }
}

}  // namespace
}  // namespace chorus_test
