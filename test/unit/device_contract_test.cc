// The contract of DeviceOps (ops/device.h), which every device passes: today
// the host (HostDevice) and the asynchronous test device, whose stream runs
// the work later on a thread of its own. Results are read back only through
// to_host(), which returns after the work asked for before it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "async_test_device.h"
#include "ops/kernels/half.h"
#include "ops/kernels/host_device.h"

namespace chorus {
namespace {

using MakeDevice = std::function<std::unique_ptr<DeviceOps>()>;

struct Named {
  const char* name;
  MakeDevice make;
};

class DeviceContract : public ::testing::TestWithParam<Named> {
 protected:
  void SetUp() override { device_ = GetParam().make(); }

  void* allocate(size_t bytes) {
    std::shared_ptr<void> memory;
    const Status status = device_->allocate(bytes, &memory);
    EXPECT_TRUE(status.ok()) << status.to_string();
    owned_.push_back(memory);
    return memory.get();
  }
  template <typename T>
  void* upload(const std::vector<T>& values) {
    void* memory = allocate(values.size() * sizeof(T));
    EXPECT_TRUE(device_->from_host(memory, values.data(), values.size() * sizeof(T)).ok());
    return memory;
  }
  template <typename T>
  std::vector<T> download(const void* memory, size_t count) {
    std::vector<T> out(count);
    EXPECT_TRUE(device_->to_host(out.data(), memory, count * sizeof(T)).ok());
    return out;
  }

  std::unique_ptr<DeviceOps> device_;
  std::vector<std::shared_ptr<void>> owned_;
};

TEST_P(DeviceContract, AllocatesAlignedMemoryOfItsOwn) {
  for (size_t bytes : {size_t{1}, size_t{64}, size_t{100}, size_t{1} << 20}) {
    void* memory = allocate(bytes);
    ASSERT_NE(memory, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(memory) % 64, 0u) << bytes;
  }
}

TEST_P(DeviceContract, BatchedCopiesAndZeroFillsRunInOrder) {
  void* a = upload(std::vector<int32_t>{1, 2, 3, 4});
  void* b = upload(std::vector<int32_t>{9, 9, 9, 9});
  void* c = allocate(16);
  // c <- a; then b[0..1] <- zeros; then c[2..3] <- b[0..1] (the zeros, since
  // the copies of one batch and of later calls run in order).
  ASSERT_TRUE(device_->copy({{c, a, 16}}).ok());
  ASSERT_TRUE(device_->copy({{b, nullptr, 8}, {static_cast<char*>(c) + 8, b, 8}}).ok());
  EXPECT_EQ(download<int32_t>(c, 4), (std::vector<int32_t>{1, 2, 0, 0}));
  EXPECT_EQ(download<int32_t>(b, 4), (std::vector<int32_t>{0, 0, 9, 9}));
}

TEST_P(DeviceContract, ScalesFloatingPointInPlaceAndOutOfPlace) {
  void* in = upload(std::vector<float>{1, 2, 3, -4});
  void* out = allocate(16);
  ASSERT_TRUE(device_->scale(in, out, 4, DataType::kFloat32, 0.5).ok());
  ASSERT_TRUE(device_->scale(in, in, 4, DataType::kFloat32, 3).ok());
  EXPECT_EQ(download<float>(out, 4), (std::vector<float>{0.5f, 1, 1.5f, -2}));
  EXPECT_EQ(download<float>(in, 4), (std::vector<float>{3, 6, 9, -12}));
  // 16-bit values scale in float32 and round once.
  void* half = upload(std::vector<uint16_t>{float_to_float16(1.0f), float_to_float16(3.0f)});
  ASSERT_TRUE(device_->scale(half, half, 2, DataType::kFloat16, 1.0 / 3).ok());
  const std::vector<uint16_t> scaled = download<uint16_t>(half, 2);
  EXPECT_EQ(scaled[0], float_to_float16(1.0f / 3));
  EXPECT_EQ(scaled[1], float_to_float16(1.0f));
}

TEST_P(DeviceContract, HostCopiesRefuseANullSource) {
  void* memory = allocate(16);
  char host[16];
  EXPECT_EQ(device_->to_host(host, nullptr, 16).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device_->from_host(memory, nullptr, 16).code(), StatusCode::kInvalidArgument);
}

TEST_P(DeviceContract, DividesIntegersTruncating) {
  void* data = upload(std::vector<int64_t>{7, -7, 9, 2});
  ASSERT_TRUE(device_->divide(data, 4, DataType::kInt64, 2).ok());
  EXPECT_EQ(download<int64_t>(data, 4), (std::vector<int64_t>{3, -3, 4, 1}));
}

TEST_P(DeviceContract, ConvertsToAndFrom16BitFloats) {
  const std::vector<float> values{1.0f, 0.1f, -65504.0f, 1e-8f};
  void* wide = upload(values);
  void* narrow = allocate(8);
  void* back = allocate(16);
  ASSERT_TRUE(device_->convert(wide, DataType::kFloat32, narrow, DataType::kBFloat16, 4).ok());
  ASSERT_TRUE(device_->convert(narrow, DataType::kBFloat16, back, DataType::kFloat32, 4).ok());
  const std::vector<float> round_trip = download<float>(back, 4);
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(round_trip[i], bfloat16_to_float(float_to_bfloat16(values[i]))) << i;
  }
  // Widening in place, the way a wire buffer comes back.
  void* in_place = upload(std::vector<uint16_t>{float_to_float16(2.5f), float_to_float16(-1.0f), 0, 0});
  ASSERT_TRUE(device_->convert(in_place, DataType::kFloat16, in_place, DataType::kFloat32, 2).ok());
  EXPECT_EQ(download<float>(in_place, 2), (std::vector<float>{2.5f, -1.0f}));
  // What cannot be converted says so.
  const Status refused = device_->convert(wide, DataType::kInt32, narrow, DataType::kFloat16, 1);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
}

TEST_P(DeviceContract, AnEventIsDoneOnceTheWorkBeforeItIs) {
  void* data = upload(std::vector<float>(1 << 16, 1.0f));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(device_->scale(data, data, 1 << 16, DataType::kFloat32, 2).ok());
  const std::shared_ptr<const Event> after = device_->record();
  after->synchronize();
  EXPECT_TRUE(after->done());
  // Read without to_host (which would wait itself): the work is done.
  const float* host_view = static_cast<const float*>(data);  // both devices' memory is host memory
  EXPECT_EQ(host_view[0], 256.0f);
  EXPECT_EQ(host_view[(1 << 16) - 1], 256.0f);
}

TEST_P(DeviceContract, WorkAfterAWaitStartsOnlyOnceTheEventIsDone) {
  // The producer: a test device whose stream is slow, writing the input.
  chorus_test::AsyncTestDevice producer(Device::custom(1), std::chrono::milliseconds(20));
  std::vector<float> source(256, 7.0f);
  void* input = allocate(source.size() * sizeof(float));
  ASSERT_TRUE(device_->copy({{input, nullptr, source.size() * sizeof(float)}}).ok());
  producer.enqueue([&] {
    std::memcpy(input, source.data(), source.size() * sizeof(float));
    return Status::OK();
  });
  ASSERT_TRUE(device_->wait(producer.record()).ok());
  void* output = allocate(source.size() * sizeof(float));
  ASSERT_TRUE(device_->copy({{output, input, source.size() * sizeof(float)}}).ok());
  EXPECT_EQ(download<float>(output, source.size()), source);
}

INSTANTIATE_TEST_SUITE_P(
    Devices, DeviceContract,
    ::testing::Values(Named{"host", [] { return std::unique_ptr<DeviceOps>(new HostDevice()); }},
                      Named{"async_test", [] {
                              return std::unique_ptr<DeviceOps>(
                                  new chorus_test::AsyncTestDevice(Device::custom(0), std::chrono::microseconds(200)));
                            }}),
    [](const ::testing::TestParamInfo<Named>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace chorus
