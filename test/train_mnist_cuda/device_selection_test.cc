// Choosing a rank's GPU, the messages when there is none, and the wording of
// CUDA, cuBLAS and cuDNN errors: all without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cuda_check.h"
#include "device_selection.h"
#include "test_files.h"

namespace train_mnist_cuda_test {
namespace {

using namespace train_mnist_cuda;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(DeviceSelection, LocalRankModuloTheVisibleGpus) {
  int device = -1;
  EXPECT_EQ(choose_device(0, 0, 8, nullptr, &device), "");
  EXPECT_EQ(device, 0);
  EXPECT_EQ(choose_device(5, 5, 8, nullptr, &device), "");
  EXPECT_EQ(device, 5);
  EXPECT_EQ(choose_device(11, 3, 2, nullptr, &device), "");
  EXPECT_EQ(device, 1);
}

TEST(DeviceSelection, ChorusCudaDeviceOverridesAndIsChecked) {
  int device = -1;
  EXPECT_EQ(choose_device(0, 3, 4, "2", &device), "");
  EXPECT_EQ(device, 2);
  for (const char* bad : {"4", "-1", "", "one", "99999999999"}) {
    EXPECT_EQ(choose_device(1, 0, 4, bad, &device),
              std::string("train_mnist_cuda: rank 1: CHORUS_CUDA_DEVICE=") + bad +
                  " is invalid: expected a GPU index from 0 to 3 (4 visible to this rank)");
  }
}

TEST(DeviceSelection, NoDeviceMessageNamesTheRankAndCudasReason) {
  DeviceProbe probe;
  probe.error = cudaErrorNoDevice;
  EXPECT_EQ(no_device_message(3, probe, ""),
            "train_mnist_cuda: no CUDA device is visible to rank 3 (cudaGetDeviceCount: cudaErrorNoDevice: "
            "no CUDA-capable device is detected; CUDA_VISIBLE_DEVICES is '')");
  probe.error = cudaSuccess;
  EXPECT_EQ(no_device_message(0, probe, nullptr),
            "train_mnist_cuda: no CUDA device is visible to rank 0 (cudaGetDeviceCount found 0 devices; "
            "CUDA_VISIBLE_DEVICES is not set)");
}

TEST(DeviceSelection, ProbeNeverThrowsAndIsStable) {
  // Without a driver every CUDA call, cudaGetLastError included, reports
  // cudaErrorInsufficientDriver again: a probe is a result, not an error.
  const DeviceProbe probe = probe_devices();
  if (probe.error != cudaSuccess) {
    EXPECT_EQ(probe.count, 0);
  }
  const DeviceProbe again = probe_devices();
  EXPECT_EQ(again.error, probe.error);
  EXPECT_EQ(again.count, probe.count);
}

TEST(CudaCheck, MessagesNameTheCallThePlaceAndTheLibrarysReason) {
  EXPECT_EQ(cuda_error_message("cudaMalloc(&p, 8)", "/src/examples/x.cc", 12, cudaErrorMemoryAllocation),
            "cudaMalloc(&p, 8) failed at x.cc:12: cudaErrorMemoryAllocation (out of memory)");
  EXPECT_THAT(cublas_error_message("cublasSgemm(h, ...)", "y.cc", 7, CUBLAS_STATUS_INVALID_VALUE),
              StartsWith("cublasSgemm(h, ...) failed at y.cc:7: CUBLAS_STATUS_INVALID_VALUE ("));
  EXPECT_THAT(cudnn_error_message("cudnnCreate(&h)", "z.cc", 1, CUDNN_STATUS_BAD_PARAM),
              StartsWith("cudnnCreate(&h) failed at z.cc:1: CUDNN_STATUS_BAD_PARAM"));
}

TEST(CudaCheck, MacrosThrowChorusErrors) {
  const std::string error = train_mnist_test::error_of([] { CUDA_CHECK(cudaErrorInvalidValue); });
  EXPECT_THAT(error, HasSubstr("cudaErrorInvalidValue failed at device_selection_test.cc:"));
  EXPECT_THAT(train_mnist_test::error_of([] { CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED); }),
              HasSubstr("CUBLAS_STATUS_NOT_INITIALIZED failed at device_selection_test.cc:"));
  EXPECT_THAT(train_mnist_test::error_of([] { CUDNN_CHECK(CUDNN_STATUS_NOT_INITIALIZED); }),
              HasSubstr("CUDNN_STATUS_NOT_INITIALIZED failed at device_selection_test.cc:"));
}

}  // namespace
}  // namespace train_mnist_cuda_test
