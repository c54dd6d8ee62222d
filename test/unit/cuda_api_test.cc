// The public CUDA helpers (chorus/cuda.h) in whatever build and machine the
// test runs on: without CUDA they refuse with the build's reason; with CUDA
// but no GPU they throw CUDA's reason; on a GPU an event on a stream fires
// once the stream's work ran, and a stream waits for it.
#include <gtest/gtest.h>

#include <string>

#include "chorus/cuda.h"
#include "chorus/status.h"

#ifdef CHORUS_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus {
namespace {

std::string error_of_event_on(void* stream) {
  try {
    (void)cuda_event_on(stream);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#ifndef CHORUS_WITH_CUDA

TEST(CudaApi, RefusesInABuildWithoutCuda) {
  EXPECT_FALSE(cuda_built());
  EXPECT_NE(error_of_event_on(nullptr).find("no CUDA support (built with CHORUS_WITH_CUDA=OFF)"), std::string::npos);
  EXPECT_THROW(cuda_stream_wait(nullptr, nullptr), Error);
}

#else

bool gpu_visible() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(CudaApi, ThrowsCudasReasonWithoutAGpu) {
  EXPECT_TRUE(cuda_built());
  if (gpu_visible()) GTEST_SKIP() << "a GPU is visible; this case is for machines without one";
  const std::string error = error_of_event_on(nullptr);
  EXPECT_NE(error.find("failed"), std::string::npos) << error;
  // A null event is done: nothing to wait for, no CUDA call.
  EXPECT_NO_THROW(cuda_stream_wait(nullptr, nullptr));
}

TEST(CudaApi, AnEventOnAStreamFiresAndAnotherStreamWaitsForIt) {
  if (!gpu_visible()) GTEST_SKIP() << "no GPU visible (cudaGetDeviceCount): needs one";
  cudaStream_t producer = nullptr;
  cudaStream_t consumer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), cudaSuccess);
  int* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), 64 << 20), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device, 1, 64 << 20, producer), cudaSuccess);
  const std::shared_ptr<const Event> ready = cuda_event_on(producer);
  cuda_stream_wait(consumer, ready);
  int first = 0;
  ASSERT_EQ(cudaMemcpyAsync(&first, device + (16 << 20) - 1, sizeof(first), cudaMemcpyDeviceToHost, consumer),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(consumer), cudaSuccess);
  EXPECT_EQ(first, 0x01010101);  // the consumer read after the producer's fill
  ready->synchronize();
  EXPECT_TRUE(ready->done());
  cudaFree(device);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
}

#endif

}  // namespace
}  // namespace chorus
