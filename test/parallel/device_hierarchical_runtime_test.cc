// The runtime over the hierarchical device backend: chorus's API with
// tensors on the asynchronous test device, whose backend is
// DeviceHierarchicalBackend (mode on) over pretend hosts in front of the
// test device's flat backend, as the GPU build puts it in front of NCCL.
// The executor packs fused tensors into its buffer, scales averages through
// the backend's factor, and completes the handles once the steps' work on
// the device's stream is done; results are read straight from the device's
// memory. Pretend hosts: np 2 and 3 one rank each, np 4 2 x 2.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/device_hierarchical_backend.h"
#include "ops/device_hierarchical_setup.h"
#include "runtime/init_with_backends.h"
#include "support/async_device/async_test_backend.h"
#include "support/device_runtime_allreduces.h"
#include "support/harness.h"
#include "support/hierarchical_reference.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;

constexpr uint64_t kSeed = 0x41e7;

HostLayout layout_for(int size) { return size == 4 ? HostLayout::block(2, 2) : HostLayout::block(size, 1); }

// A BackendMaker: the hierarchy over pretend hosts on a new test device.
chorus::BackendMaker hierarchical_maker(AsyncTestDevice** device, bool* hierarchical) {
  return [device, hierarchical](std::unique_ptr<chorus::Backend> transport, std::unique_ptr<chorus::Backend>* out) {
    auto shared = std::make_shared<AsyncTestDevice>(chorus::Device::custom(0), std::chrono::microseconds(100));
    *device = shared.get();
    const HostLayout layout = layout_for(world_size());
    chorus::DeviceHierarchySetup setup;
    setup.selection = chorus::HierarchicalSelection{chorus::AutoOnOff::kOn, 0, world_size()};
    setup.topology.rank = world_rank();
    setup.topology.size = world_size();
    setup.topology.node = layout.host_of[static_cast<size_t>(world_rank())];
    setup.topology.nodes = layout.hosts;
    setup.topology.local_rank = layout.local_of[static_cast<size_t>(world_rank())];
    setup.topology.local_size = layout.local_size;
    setup.device = shared;
    const auto level = [shared](MPI_Comm, std::unique_ptr<chorus::Backend> level_transport,
                                std::unique_ptr<chorus::Backend>* made) {
      *made = std::make_unique<AsyncTestBackend>(std::move(level_transport), shared);
      return chorus::Status::OK();
    };
    setup.make_local = level;
    setup.make_cross = level;
    setup.flat_name = "test device";
    const chorus::Status status = chorus::make_device_hierarchical_backend(
        setup, MPI_COMM_WORLD, std::make_unique<AsyncTestBackend>(std::move(transport), shared), out);
    *hierarchical = dynamic_cast<chorus::DeviceHierarchicalBackend*>(out->get()) != nullptr;
    return status;
  };
}

class HierarchicalRuntime {
 public:
  explicit HierarchicalRuntime(std::vector<std::pair<std::string, const char*>> env = {}) : env_(std::move(env)) {
    const chorus::Status status =
        thrown_by([&] { chorus::detail::init_with_backends({hierarchical_maker(&device_, &hierarchical_)}); });
    EXPECT_TRUE(is_ok(status));
  }
  ~HierarchicalRuntime() { shutdown_chorus(); }
  bool hierarchical() const { return hierarchical_; }

  chorus::Tensor upload(const Buffer& buffer) {
    std::shared_ptr<void> memory;
    EXPECT_TRUE(is_ok(device_->allocate(buffer.bytes(), &memory)));
    EXPECT_TRUE(is_ok(device_->from_host(memory.get(), buffer.data(), buffer.bytes())));
    owned_.push_back(memory);
    return chorus::Tensor(memory.get(), buffer.dtype(), buffer.shape(), device_->device());
  }
  // Straight from the device's memory, without waiting for its stream: a
  // done handle promises the result is in place.
  Buffer download(const chorus::Tensor& tensor) {
    Buffer out(tensor.dtype, tensor.shape);
    if (out.bytes() > 0) std::memcpy(out.data(), tensor.data, out.bytes());
    return out;
  }

 private:
  ScopedEnv env_;
  AsyncTestDevice* device_ = nullptr;
  bool hierarchical_ = false;
  std::vector<std::shared_ptr<void>> owned_;
};

// Tensors of every dtype and op submitted together (fused unless fusion is
// off), then each result against the reference (small values: exact sums in
// any order, so only the averages' and postscales' roundings show).
void expect_allreduces(HierarchicalRuntime& rt, const std::string& prefix) {
  std::vector<AllreduceCase> cases = common_allreduce_cases();
  cases[4] = {DataType::kInt8, ReduceOp::kMin};  // instead of int64's sum
  chorus_test::expect_allreduces(
      prefix, cases, {chorus::Shape{5}, chorus::Shape{33, 7}, chorus::Shape{0}, chorus::Shape{1}}, kSeed,
      [&](const Buffer& b) { return rt.upload(b); }, [&](const chorus::Tensor& t) { return rt.download(t); });
}

TEST(DeviceHierarchicalRuntime, AllreducesFusedAndAlone) {
  HierarchicalRuntime rt;
  EXPECT_TRUE(rt.hierarchical());
  expect_allreduces(rt, "fused");
  // A large tensor alone, out of place through a grouped allreduce.
  const auto inputs = make_inputs(DataType::kFloat32, {100003}, world_size(), 500, kSeed);
  chorus::Tensor in = rt.upload(inputs[static_cast<size_t>(world_rank())]);
  chorus::Tensor out = rt.upload(Buffer(DataType::kFloat32, {100003}));
  chorus::grouped_allreduce("large", {in}, {out}, allreduce_options(ReduceOp::kAverage));
  EXPECT_TRUE(matches(rt.download(out).tensor(), reference_reduce(inputs, ReduceOp::kAverage)));
}

TEST(DeviceHierarchicalRuntime, AllreducesWithFusionOff) {
  HierarchicalRuntime rt(std::vector<std::pair<std::string, const char*>>{{"CHORUS_FUSION_THRESHOLD", "0"}});
  expect_allreduces(rt, "unfused");
}

TEST(DeviceHierarchicalRuntime, OtherCollectivesGoToTheFlatBackend) {
  HierarchicalRuntime rt;
  const int rank = world_rank(), size = world_size();
  std::vector<Buffer> rows;
  for (int r = 0; r < size; ++r) rows.push_back(make_input(DataType::kInt32, {2 + r % 2, 3}, r, 1, kSeed));
  Handle gathered = chorus::allgather("gather", rt.upload(rows[static_cast<size_t>(rank)]));
  EXPECT_TRUE(same_bytes(rt.download(gathered.output()).tensor(), reference_allgather(rows)));
  const auto sent = make_inputs(DataType::kFloat64, {17}, size, 2, kSeed);
  chorus::Tensor b = rt.upload(sent[static_cast<size_t>(rank)]);
  chorus::broadcast("bcast", b, size - 1);
  EXPECT_TRUE(same_bytes(rt.download(b).tensor(), sent[static_cast<size_t>(size - 1)]));
  const auto scattered = make_inputs(DataType::kFloat32, {2 * size + 1, 4}, size, 3, kSeed);
  Handle rs = chorus::reducescatter("scatter", rt.upload(scattered[static_cast<size_t>(rank)]), ReduceOp::kSum);
  EXPECT_TRUE(matches(rt.download(rs.output()).tensor(), reference_reducescatter(scattered, ReduceOp::kSum, rank)));
  EXPECT_NO_THROW(chorus::barrier());
}

}  // namespace
}  // namespace chorus_test
