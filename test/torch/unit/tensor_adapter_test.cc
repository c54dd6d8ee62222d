// The tensor adapter's parts that need no runtime: device mapping (faithful
// for CPU and CUDA, the one refusal for devices Chorus has no kind for),
// allocation on a tensor's device, and views. Which devices a build serves
// is the runtime's answer: see parallel/unsupported_device_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <functional>
#include <memory>
#include <vector>

#include "chorus/torch/ops.h"
#include "tensor_adapter.h"

namespace {

namespace detail = chorus::torch::detail;
using chorus::Device;
using ::testing::HasSubstr;

chorus::Status thrown_by(const std::function<void()>& call) {
  try {
    call();
  } catch (const chorus::Error& e) {
    return chorus::Status(e.code(), e.what());
  }
  return chorus::Status::OK();
}

TEST(TensorAdapterTest, CpuAndCudaMapFaithfully) {
  EXPECT_EQ(detail::to_chorus_device(c10::Device(c10::kCPU), "t"), Device::cpu());
  EXPECT_EQ(detail::to_chorus_device(c10::Device(c10::kCUDA, 0), "t"), Device::cuda(0));
  EXPECT_EQ(detail::to_chorus_device(c10::Device(c10::kCUDA, 3), "t"), Device::cuda(3));
  EXPECT_EQ(detail::to_torch_device(Device::cpu()), c10::Device(c10::kCPU));
  EXPECT_EQ(detail::to_torch_device(Device::cuda(2)), c10::Device(c10::kCUDA, 2));
}

// Every chorus dtype LibTorch has maps both ways; int16 is torch.int16
// (Short). LibTorch 1.13 has no unsigned 16-bit dtype (torch.uint16 came in
// 2.3), so chorus's uint16 has no torch dtype there: refused, saying so.
TEST(TensorAdapterTest, DtypesMapBothWaysAndUint16NeedsANewerLibTorch) {
  using chorus::DataType;
  for (int value = 0; value < chorus::kNumDataTypes; ++value) {
    const auto dtype = static_cast<DataType>(value);
#if TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 3)
    if (dtype == DataType::kUInt16) {
      const chorus::Status refused = thrown_by([&] { (void)chorus::torch::to_torch_dtype(dtype); });
      EXPECT_EQ(refused.code(), chorus::StatusCode::kInvalidArgument);
      EXPECT_THAT(refused.message(), HasSubstr("chorus dtype uint16 has no torch dtype in LibTorch " TORCH_VERSION));
      continue;
    }
#endif
    const c10::ScalarType type = chorus::torch::to_torch_dtype(dtype);
    EXPECT_EQ(chorus::torch::to_chorus_dtype(type, "t"), dtype) << chorus::dtype_name(dtype);
  }
  EXPECT_EQ(chorus::torch::to_chorus_dtype(torch::kInt16, "t"), DataType::kInt16);
  EXPECT_EQ(chorus::torch::to_torch_dtype(DataType::kInt16), torch::kInt16);
}

TEST(TensorAdapterTest, DevicesWithoutAChorusKindAreRefusedInTheOneMessage) {
  for (const c10::Device device : {c10::Device(c10::kMeta), c10::Device(c10::kMPS),
                                   c10::Device(c10::kXLA, 1)}) {
    const chorus::Status status = thrown_by([&] { detail::to_chorus_device(device, "w"); });
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), detail::unsupported_device("w", device.str()).message());
  }
  EXPECT_EQ(detail::unsupported_device("w", "cuda:1").message(),
            "tensor 'w' is on device cuda:1: no backend in this build supports tensors on cuda:1");
  EXPECT_EQ(detail::unsupported_device("w", "cuda:1").code(), chorus::StatusCode::kInvalidArgument);
}

TEST(TensorAdapterTest, AllocationsFollowTheTensorsDevice) {
  const torch::Tensor meta = torch::empty({2, 3}, torch::TensorOptions().device(torch::kMeta));
  const torch::Tensor like = detail::empty_like_contiguous(meta);
  EXPECT_EQ(like.device(), meta.device());
  EXPECT_EQ(like.scalar_type(), torch::kFloat32);
  const torch::Tensor wire = detail::empty_like_contiguous(meta.t(), torch::kFloat16);
  EXPECT_EQ(wire.device(), meta.device());
  EXPECT_EQ(wire.scalar_type(), torch::kFloat16);
  EXPECT_EQ(wire.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(wire.is_contiguous());
  EXPECT_FALSE(wire.requires_grad());
}

TEST(TensorAdapterTest, ViewsCarryTheTensorsDevice) {
  const torch::Tensor cpu = torch::arange(6, torch::kInt64).reshape({2, 3});
  const chorus::Tensor view = detail::view_of(cpu, "t");
  EXPECT_EQ(view.data, cpu.data_ptr());
  EXPECT_EQ(view.dtype, chorus::DataType::kInt64);
  EXPECT_EQ(view.shape, (chorus::Shape{2, 3}));
  EXPECT_EQ(view.device, Device::cpu());
}

TEST(TensorAdapterTest, TheOutputAllocatorAllocatesOnTheDeviceAsked) {
  auto slot = std::make_shared<detail::AllocatedOutput>();
  const chorus::OutputAllocator allocate = detail::torch_allocator(slot);
  chorus::Tensor out;
  ASSERT_TRUE(allocate({4, 2}, chorus::DataType::kBFloat16, Device::cpu(), &out).ok());
  EXPECT_EQ(slot->tensor.device(), c10::Device(c10::kCPU));
  EXPECT_EQ(slot->tensor.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(out.data, slot->tensor.data_ptr());
  EXPECT_EQ(out.device, Device::cpu());

  // CUDA memory where LibTorch has it; otherwise LibTorch's refusal as a
  // status, not an exception through the runtime's thread.
  const chorus::Status status = allocate({4}, chorus::DataType::kFloat32, Device::cuda(0), &out);
  if (torch::cuda::is_available()) {
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(slot->tensor.device(), c10::Device(c10::kCUDA, 0));
    EXPECT_EQ(out.device, Device::cuda(0));
  } else {
    EXPECT_EQ(status.code(), chorus::StatusCode::kInternal);
    EXPECT_THAT(status.message(),
                HasSubstr("allocating a torch tensor of [4] float32 on cuda:0 failed"));
  }
}

}  // namespace
