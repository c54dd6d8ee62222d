// Shared by the NCCL backend's parallel tests (built with CHORUS_WITH_NCCL
// only; header-only so that the parallel support library needs no NCCL):
// whether every rank has a GPU of its own, an NcclBackend made the way the
// runtime makes one (make_nccl_backend over an MPI backend on a
// communicator of its own), device memory to and from host buffers, and a
// gate that holds the device's stream so that work stays outstanding.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "ops/cuda/cuda_device.h"
#include "ops/cuda/cuda_event.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/nccl/nccl_backend.h"

namespace chorus_test {

// Collective: empty when every rank can take GPU cuda:<world rank> (the
// tests run on one host), else why not (the same text on every rank): NCCL
// refuses two ranks on one GPU, and without a GPU there is nothing to test.
inline std::string gpu_shortage() {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int count = 0;
  const cudaError_t counted = cudaGetDeviceCount(&count);
  if (counted != cudaSuccess) count = 0;
  int fewest = count;
  MPI_Allreduce(&count, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest >= size) return "";
  if (fewest == 0) {
    return "no CUDA GPU is visible" +
           (counted != cudaSuccess ? std::string(" (cudaGetDeviceCount: ") + cudaGetErrorString(counted) + ")"
                                   : std::string()) +
           ": the NCCL backend needs one";
  }
  return "needs one GPU per rank (NCCL refuses two ranks on one GPU): " + std::to_string(size) + " ranks, " +
         std::to_string(fewest) + " GPU(s) visible";
}

// A job's NCCL backend on cuda:<world rank>, with the MPI transport's
// communicator and datatypes it needs.
class NcclJob {
 public:
  static chorus::Status create(const chorus::NcclOptions& options, std::unique_ptr<NcclJob>* out) {
    std::unique_ptr<NcclJob> job(new NcclJob());
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::unique_ptr<chorus::CudaDevice> device;
    CHORUS_RETURN_IF_ERROR(chorus::CudaDevice::create(rank, &device));
    CHORUS_RETURN_IF_ERROR(job->types_.create());
    if (MPI_Comm_dup(MPI_COMM_WORLD, &job->comm_) != MPI_SUCCESS) return chorus::Status::Internal("MPI_Comm_dup");
    std::unique_ptr<chorus::Backend> backend;
    CHORUS_RETURN_IF_ERROR(chorus::make_nccl_backend(
        std::move(device), std::make_unique<chorus::MpiBackend>(job->comm_, &job->types_), options, &backend));
    job->backend_.reset(static_cast<chorus::NcclBackend*>(backend.release()));
    *out = std::move(job);
    return chorus::Status::OK();
  }
  ~NcclJob() {
    backend_.reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    types_.destroy();
  }

  chorus::NcclBackend& backend() { return *backend_; }
  chorus::CudaDevice& device() { return *backend_->cuda_device(); }

 private:
  NcclJob() = default;
  MPI_Comm comm_ = MPI_COMM_NULL;
  chorus::MpiTypes types_;
  std::unique_ptr<chorus::NcclBackend> backend_;
};

// `bytes` of device memory holding `host`'s bytes (garbage when null).
inline std::shared_ptr<void> to_device(chorus::DeviceOps& device, const void* host, size_t bytes) {
  std::shared_ptr<void> memory;
  const chorus::Status allocated = device.allocate(bytes, &memory);
  EXPECT_TRUE(allocated.ok()) << allocated.message();
  if (!allocated.ok()) return nullptr;
  if (host != nullptr) {
    const chorus::Status copied = device.from_host(memory.get(), host, bytes);
    EXPECT_TRUE(copied.ok()) << copied.message();
  }
  return memory;
}

inline void to_host(chorus::DeviceOps& device, void* host, const void* from, size_t bytes) {
  const chorus::Status copied = device.to_host(host, from, bytes);
  EXPECT_TRUE(copied.ok()) << copied.message();
}

// Holds the device's stream: work asked for after the gate waits behind a
// host function on a stream of its own until open() (or 60 s), so the
// backend's work on it stays outstanding for as long as a test needs.
class StreamGate {
 public:
  explicit StreamGate(chorus::CudaDevice& device) {
    cudaSetDevice(device.index());
    EXPECT_EQ(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaLaunchHostFunc(side_, &StreamGate::hold, &open_), cudaSuccess);
    std::shared_ptr<const chorus::CudaEvent> passed;
    const chorus::Status recorded = chorus::CudaEvent::record(side_, &passed);
    EXPECT_TRUE(recorded.ok()) << recorded.message();
    if (recorded.ok()) {
      EXPECT_TRUE(device.wait(passed).ok());
    }
  }
  ~StreamGate() {
    open();
    cudaStreamDestroy(side_);
  }
  void open() {
    open_.store(true);
    cudaStreamSynchronize(side_);
  }

 private:
  // A host function may not call CUDA; it only sleeps.
  static void CUDART_CB hold(void* open) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!static_cast<std::atomic<bool>*>(open)->load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  cudaStream_t side_ = nullptr;
  std::atomic<bool> open_{false};
};

}  // namespace chorus_test
