// What CudaDevice does beyond the DeviceOps contract (device_contract_test
// holds it to that): its errors, and waiting for another stream's event on
// the device. Built with CUDA only; the cases that need a GPU skip without
// one, naming why.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ops/cuda/cuda_device.h"
#include "ops/cuda/cuda_event.h"

namespace chorus {
namespace {

int visible_gpus(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *why = std::string("no GPU visible: cudaGetDeviceCount failed: ") + cudaGetErrorString(error);
    return 0;
  }
  if (count == 0) *why = "no GPU visible: cudaGetDeviceCount found 0";
  return count;
}

#define SKIP_WITHOUT_GPU()                       \
  do {                                           \
    std::string why;                             \
    if (visible_gpus(&why) == 0) GTEST_SKIP() << why; \
  } while (0)

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CudaDevice, CreateRefusesAMissingGpuNamingItAndHowManyThereAre) {
  std::string why;
  const int count = visible_gpus(&why);
  std::unique_ptr<CudaDevice> device;
  Status status = CudaDevice::create(count, &device);  // one past the last
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(device, nullptr);
  EXPECT_TRUE(contains(status.message(), "no CUDA device cuda:" + std::to_string(count) + " (")) << status.message();
  EXPECT_TRUE(contains(status.message(), count == 0 ? " visible" : "(" + std::to_string(count) + " visible"))
      << status.message();
  status = CudaDevice::create(-1, &device);
  EXPECT_FALSE(status.ok());
  EXPECT_TRUE(contains(status.message(), "no CUDA device cuda:-1 (")) << status.message();
}

TEST(CudaDevice, CudaStatusNamesTheCallAndCudasError) {
  EXPECT_TRUE(cuda_status("cudaMalloc", cudaSuccess).ok());
  const Status status = cuda_status("cudaMalloc(1048576 bytes) on cuda:0", cudaErrorMemoryAllocation);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(), "cudaMalloc(1048576 bytes) on cuda:0 failed: out of memory (cudaErrorMemoryAllocation)");
}

TEST(CudaDevice, AnAllocationTooLargeNamesItsSizeAndTheDevice) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaDevice> device;
  ASSERT_TRUE(CudaDevice::create(0, &device).ok());
  std::shared_ptr<void> memory;
  const Status status = device->allocate(size_t{1} << 60, &memory);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_TRUE(contains(status.message(), "cudaMalloc(1152921504606846976 bytes) on cuda:0 failed: ")) << status.message();
  EXPECT_EQ(memory, nullptr);
  // The device goes on working.
  EXPECT_TRUE(device->allocate(1024, &memory).ok());
}

// A producer on a stream of its own writes the input 200 ms from now (a host
// function sleeps first). The device waits for its event on the stream: the
// call returns at once, and the copy after it still sees the new input.
TEST(CudaDevice, WaitsForAnotherStreamsEventOnTheDeviceNotTheHost) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<CudaDevice> device;
  ASSERT_TRUE(CudaDevice::create(0, &device).ok());
  constexpr size_t kCount = 1024;
  std::shared_ptr<void> input, output;
  ASSERT_TRUE(device->allocate(kCount * sizeof(int32_t), &input).ok());
  ASSERT_TRUE(device->allocate(kCount * sizeof(int32_t), &output).ok());
  ASSERT_TRUE(device->copy({{input.get(), nullptr, kCount * sizeof(int32_t)}}).ok());
  device->record()->synchronize();

  void* pinned = nullptr;  // so that the producer's copy is asynchronous
  ASSERT_EQ(cudaMallocHost(&pinned, kCount * sizeof(int32_t)), cudaSuccess);
  auto* staged = static_cast<int32_t*>(pinned);
  for (size_t i = 0; i < kCount; ++i) staged[i] = static_cast<int32_t>(i) + 1;
  cudaStream_t producer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  const auto sleep = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); };
  ASSERT_EQ(cudaLaunchHostFunc(producer, sleep, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(input.get(), staged, kCount * sizeof(int32_t), cudaMemcpyHostToDevice, producer),
            cudaSuccess);
  std::shared_ptr<const CudaEvent> written;
  ASSERT_TRUE(CudaEvent::record(producer, &written).ok());

  const auto before = std::chrono::steady_clock::now();
  ASSERT_TRUE(device->wait(written).ok());
  ASSERT_TRUE(device->copy({{output.get(), input.get(), kCount * sizeof(int32_t)}}).ok());
  const std::shared_ptr<const Event> copied = device->record();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(100));
  EXPECT_NE(dynamic_cast<const CudaEvent*>(copied.get()), nullptr);

  std::vector<int32_t> result(kCount);
  ASSERT_TRUE(device->to_host(result.data(), output.get(), kCount * sizeof(int32_t)).ok());
  EXPECT_TRUE(copied->done());
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(result[i], static_cast<int32_t>(i) + 1) << i;
  cudaStreamDestroy(producer);
  cudaFreeHost(staged);
}

}  // namespace
}  // namespace chorus
