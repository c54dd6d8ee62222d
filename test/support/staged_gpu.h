// Shared by the host-staged GPU backend's tests (CUDA builds only;
// header-only, so that the parallel support library needs no CUDA): whether
// every rank has a GPU (ranks may share one: the staged path allows it), the
// GPU a rank binds to, and device memory freed at the end of a scope.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <string>

namespace chorus_test {

// Collective: empty when every rank sees a GPU, else why not (the same
// answer on every rank, so that all skip or none does). *visible: the GPUs
// this rank sees.
inline std::string why_no_gpu(int* visible) {
  *visible = 0;
  const cudaError_t error = cudaGetDeviceCount(visible);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    *visible = 0;
  }
  int mine = *visible > 0 ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 1) return "";
  if (mine == 0) {
    return std::string("this rank sees no CUDA device (") +
           (error != cudaSuccess ? cudaGetErrorString(error) : "cudaGetDeviceCount found none") + ")";
  }
  return "another rank sees no CUDA device";
}

// This rank's index among the ranks of its host, before chorus::init().
inline int host_local_rank() {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int rank = 0;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_free(&local);
  return rank;
}

// Device memory, freed at the end of the scope.
struct DeviceBytes {
  explicit DeviceBytes(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&data, n == 0 ? 1 : n), cudaSuccess); }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data = nullptr;
  size_t bytes;
};

}  // namespace chorus_test
