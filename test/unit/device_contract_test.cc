// The contract of DeviceOps (core/contracts/device.h), which every device passes: the
// host (HostDevice), the asynchronous test device, whose stream runs the
// work later on a thread of its own, and in a build with CUDA the GPU
// (CudaDevice on cuda:0; its cases skip when no GPU is visible). Results are
// read back through to_host(), which returns after the work asked for before
// it, or read directly (`peek`) where a test checks an event.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ops/kernels/convert.h"
#include "ops/kernels/half.h"
#include "ops/kernels/host_device.h"
#include "ops/kernels/scale.h"
#include "support/async_device/async_test_device.h"
#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "ops/cuda/cuda_device.h"
#endif

namespace chorus {
namespace {

struct Named {
  const char* name;
  // The device, or null with the reason it cannot be had here (its cases skip).
  std::function<std::unique_ptr<DeviceOps>(std::string* unavailable)> make;
  // Reads and writes the device's memory from the host without waiting for
  // its stream: what a reader that trusts an event, or another producer, does.
  std::function<void(void* host, const void* memory, size_t bytes)> peek;
  std::function<void(void* memory, const void* host, size_t bytes)> poke;
};

void host_peek(void* host, const void* memory, size_t bytes) { std::memcpy(host, memory, bytes); }
void host_poke(void* memory, const void* host, size_t bytes) { std::memcpy(memory, host, bytes); }

#ifdef CHORUS_WITH_CUDA
std::unique_ptr<DeviceOps> make_cuda_device(std::string* unavailable) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    *unavailable = std::string("no GPU visible (cudaGetDeviceCount: ") +
                   (error != cudaSuccess ? cudaGetErrorString(error) : "0 devices") + ")";
    return nullptr;
  }
  std::unique_ptr<CudaDevice> device;
  const Status status = CudaDevice::create(0, &device);
  EXPECT_TRUE(status.ok()) << status.to_string();  // a GPU is there: not using it is a failure
  return device;
}

// cudaMemcpy goes on the legacy default stream, which does not wait for the
// device's non-blocking one.
void cuda_peek(void* host, const void* memory, size_t bytes) {
  cudaSetDevice(0);
  ASSERT_EQ(cudaMemcpy(host, memory, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}
void cuda_poke(void* memory, const void* host, size_t bytes) {
  cudaSetDevice(0);
  ASSERT_EQ(cudaMemcpy(memory, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}
#endif

class DeviceContract : public ::testing::TestWithParam<Named> {
 protected:
  void SetUp() override {
    std::string unavailable;
    device_ = GetParam().make(&unavailable);
    if (device_ == nullptr && !unavailable.empty()) GTEST_SKIP() << unavailable;
    ASSERT_NE(device_, nullptr);
  }

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
  // And narrowing in place, the way a wire buffer is made.
  void* narrowed = upload(std::vector<float>{2.5f, 0.1f, -3.0f, 65536.0f});
  ASSERT_TRUE(device_->convert(narrowed, DataType::kFloat32, narrowed, DataType::kFloat16, 4).ok());
  EXPECT_EQ(download<uint16_t>(narrowed, 4),
            (std::vector<uint16_t>{float_to_float16(2.5f), float_to_float16(0.1f), float_to_float16(-3.0f),
                                   float_to_float16(65536.0f)}));
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
  std::vector<float> host_view(1 << 16);
  GetParam().peek(host_view.data(), data, host_view.size() * sizeof(float));
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
    GetParam().poke(input, source.data(), source.size() * sizeof(float));
    return Status::OK();
  });
  ASSERT_TRUE(device_->wait(producer.record()).ok());
  void* output = allocate(source.size() * sizeof(float));
  ASSERT_TRUE(device_->copy({{output, input, source.size() * sizeof(float)}}).ok());
  EXPECT_EQ(download<float>(output, source.size()), source);
}

// The first index where two byte arrays differ, or -1.
int64_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

TEST_P(DeviceContract, BatchedCopiesOfAnySizeAndAlignmentMatchCopyingInOrder) {
  // 1500 pieces (more than one CUDA launch holds) of 1 byte to 100 KiB (many
  // of the CUDA kernel's blocks) at any offsets, zero fills among them, and
  // pieces that overwrite or read what earlier ones wrote.
  constexpr size_t kArena = size_t{1} << 20;
  std::mt19937 rng(5);
  std::vector<uint8_t> source(kArena), target(kArena);
  for (uint8_t& byte : source) byte = static_cast<uint8_t>(rng());
  for (uint8_t& byte : target) byte = static_cast<uint8_t>(rng());
  char* src = static_cast<char*>(upload(source));
  char* dst = static_cast<char*>(upload(target));
  std::vector<uint8_t> expected = target;
  std::vector<DeviceOps::Copy> copies;
  for (int i = 0; i < 1500; ++i) {
    const size_t bytes = 1 + (i % 50 == 0 ? rng() % (100 << 10) : rng() % 300);
    const size_t to = rng() % (kArena - bytes);
    const size_t from = rng() % (kArena - bytes);
    const int kind = static_cast<int>(rng() % 10);
    if (kind == 0) {
      copies.push_back({dst + to, nullptr, bytes});
      std::memset(&expected[to], 0, bytes);
    } else if (kind == 1 && (from + bytes <= to || to + bytes <= from)) {
      copies.push_back({dst + to, dst + from, bytes});
      std::memcpy(&expected[to], &expected[from], bytes);
    } else {
      copies.push_back({dst + to, src + from, bytes});
      std::memcpy(&expected[to], &source[from], bytes);
    }
  }
  ASSERT_TRUE(device_->copy(copies).ok());
  EXPECT_EQ(first_difference(download<uint8_t>(dst, kArena), expected), -1);
}

TEST_P(DeviceContract, ScalesIntegersAsHorovodBitForBitAsTheHostKernels) {
  // Every 16-bit pattern (as int16 and uint16, and as pairs of 8-bit
  // values), and 32- and 64-bit values at and near their bounds, by factors
  // that truncate, round in double, flip the sign and saturate.
  std::vector<uint16_t> sixteen(1 << 16);
  for (uint32_t h = 0; h < sixteen.size(); ++h) sixteen[h] = static_cast<uint16_t>(h);
  const std::vector<int32_t> wide32{0, 1, -1, 7, -7, 100, INT32_MAX, INT32_MIN, INT32_MAX - 1, 1 << 30};
  const std::vector<int64_t> wide64{0, 1, -1, 7, INT64_MAX, INT64_MIN, (int64_t{1} << 53) + 1, -(int64_t{1} << 62)};
  const auto check = [&](const void* values, DataType dtype, size_t count, double factor) {
    const size_t bytes = count * dtype_size(dtype);
    std::vector<uint8_t> input(bytes), expected(bytes);
    std::memcpy(input.data(), values, bytes);
    ASSERT_TRUE(chorus::scale(input.data(), expected.data(), static_cast<int64_t>(count), dtype, factor).ok());
    void* in = upload(input);
    void* out = allocate(bytes);
    ASSERT_TRUE(device_->scale(in, out, static_cast<int64_t>(count), dtype, factor).ok());
    const int64_t at = first_difference(download<uint8_t>(out, bytes), expected);
    EXPECT_EQ(at, -1) << dtype_name(dtype) << " x " << factor << ", element "
                      << (at < 0 ? -1 : at / static_cast<int64_t>(dtype_size(dtype)));
    ASSERT_TRUE(device_->scale(in, in, static_cast<int64_t>(count), dtype, factor).ok());  // in place
    EXPECT_EQ(first_difference(download<uint8_t>(in, bytes), expected), -1) << dtype_name(dtype) << " in place";
  };
  for (double factor : {0.5, 1.0 / 3, 0.29, -2.5, 1e5, -1e30}) {
    check(sixteen.data(), DataType::kInt16, sixteen.size(), factor);
    check(sixteen.data(), DataType::kUInt16, sixteen.size(), factor);
    check(sixteen.data(), DataType::kInt8, 2 * sixteen.size(), factor);
    check(sixteen.data(), DataType::kUInt8, 2 * sixteen.size(), factor);
    check(wide32.data(), DataType::kInt32, wide32.size(), factor);
    check(wide64.data(), DataType::kInt64, wide64.size(), factor);
  }
  void* flags = upload(std::vector<uint8_t>{1, 0});
  EXPECT_EQ(device_->scale(flags, flags, 2, DataType::kBool, 2.0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device_->scale(flags, flags, 2, DataType::kInt16, std::nan("")).code(), StatusCode::kInvalidArgument);
}

TEST_P(DeviceContract, Divides16BitIntegersTruncating) {
  void* signed16 = upload(std::vector<int16_t>{7, -7, 32767, -32768});
  ASSERT_TRUE(device_->divide(signed16, 4, DataType::kInt16, 3).ok());
  EXPECT_EQ(download<int16_t>(signed16, 4), (std::vector<int16_t>{2, -2, 10922, -10922}));
  void* unsigned16 = upload(std::vector<uint16_t>{7, 65535});
  ASSERT_TRUE(device_->divide(unsigned16, 2, DataType::kUInt16, 4).ok());
  EXPECT_EQ(download<uint16_t>(unsigned16, 2), (std::vector<uint16_t>{1, 16383}));
}

TEST_P(DeviceContract, Converts16BitFloatsBitForBitAsTheHostKernels) {
  // Every float16 and bfloat16 value; and floats at, next to and halfway
  // between those values (ties, subnormals, overflow, NaN payloads).
  std::vector<uint16_t> sixteen(1 << 16);
  std::vector<uint32_t> floats;
  for (uint32_t h = 0; h < sixteen.size(); ++h) {
    sixteen[h] = static_cast<uint16_t>(h);
    const float widened = float16_to_float(static_cast<uint16_t>(h));
    uint32_t bits;
    std::memcpy(&bits, &widened, sizeof(bits));
    floats.insert(floats.end(), {bits, bits + 1, bits - 1, bits + 0x1000, h << 16, (h << 16) + 0x8000, (h << 16) - 1});
  }
  const auto check = [&](const void* values, DataType from, DataType to, size_t count, double factor) {
    const size_t in_bytes = count * dtype_size(from);
    const size_t out_bytes = count * dtype_size(to);
    std::vector<uint8_t> input(in_bytes), expected(out_bytes);
    std::memcpy(input.data(), values, in_bytes);
    void* in = upload(input);
    void* out = allocate(out_bytes);
    if (from == to) {
      ASSERT_TRUE(chorus::scale(input.data(), expected.data(), static_cast<int64_t>(count), from, factor).ok());
      ASSERT_TRUE(device_->scale(in, out, static_cast<int64_t>(count), from, factor).ok());
    } else {
      ASSERT_TRUE(chorus::convert(input.data(), from, expected.data(), to, static_cast<int64_t>(count)).ok());
      ASSERT_TRUE(device_->convert(in, from, out, to, static_cast<int64_t>(count)).ok());
    }
    const int64_t at = first_difference(download<uint8_t>(out, out_bytes), expected);
    EXPECT_EQ(at, -1) << dtype_name(from) << " to " << dtype_name(to) << ", element "
                      << (at < 0 ? -1 : at / static_cast<int64_t>(dtype_size(to)));
  };
  for (DataType narrow : {DataType::kFloat16, DataType::kBFloat16}) {
    for (DataType wide : {DataType::kFloat32, DataType::kFloat64}) check(sixteen.data(), narrow, wide, sixteen.size(), 1);
    check(floats.data(), DataType::kFloat32, narrow, floats.size(), 1);
    check(sixteen.data(), narrow, narrow, sixteen.size(), 1.0 / 3);
    check(sixteen.data(), narrow, narrow, sixteen.size(), 1e5);
  }
  check(sixteen.data(), DataType::kFloat16, DataType::kBFloat16, sixteen.size(), 1);
  check(sixteen.data(), DataType::kBFloat16, DataType::kFloat16, sixteen.size(), 1);
  check(floats.data(), DataType::kFloat32, DataType::kFloat64, floats.size(), 1);
  check(floats.data(), DataType::kFloat32, DataType::kFloat32, floats.size(), 1.0 / 3);
}

Named host_device() {
  return {"host", [](std::string*) { return std::unique_ptr<DeviceOps>(new HostDevice()); }, host_peek, host_poke};
}

Named async_test_device() {
  return {"async_test",
          [](std::string*) {
            return std::unique_ptr<DeviceOps>(
                new chorus_test::AsyncTestDevice(Device::custom(0), std::chrono::microseconds(200)));
          },
          host_peek, host_poke};
}

std::vector<Named> devices() {
  std::vector<Named> all{host_device(), async_test_device()};
#ifdef CHORUS_WITH_CUDA
  all.push_back(Named{"cuda", make_cuda_device, cuda_peek, cuda_poke});
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceContract, ::testing::ValuesIn(devices()),
                         [](const ::testing::TestParamInfo<Named>& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace chorus
