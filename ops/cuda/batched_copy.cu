#include "ops/cuda/batched_copy.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/batched_copy_block.h"

namespace chorus {
namespace {

constexpr unsigned kThreads = 256;
// Small batches (a few tensors) send a small parameter block.
constexpr size_t kSmallLaunch = 32;

template <size_t kCapacity>
struct CopyParameters {
  char* to[kCapacity];
  const char* from[kCapacity];  // null: zeros
  uint64_t bytes[kCapacity];
  uint32_t first_block[kCapacity];
  uint32_t count;
};
// CUDA 12.1's limit on a kernel's parameters (Volta and later).
static_assert(sizeof(CopyParameters<kCopyPiecesPerLaunch>) <= 32764, "copy descriptors exceed a kernel's parameters");

// Every thread of a block finds its piece alike (the constant cache
// broadcasts the parameters it reads), then the block copies its part.
// __grid_constant__: the parameters are read where they are, never copied
// to local memory.
template <size_t kCapacity>
__global__ void __launch_bounds__(kThreads) batched_copy(const __grid_constant__ CopyParameters<kCapacity> p) {
  const uint32_t piece = piece_of_block(p.first_block, p.count, blockIdx.x);
  copy_block(p.to[piece], p.from[piece], p.bytes[piece], blockIdx.x - p.first_block[piece], threadIdx.x, blockDim.x);
}

template <size_t kCapacity>
cudaError_t launch_with(const CopyLaunch& launch, cudaStream_t stream) {
  CopyParameters<kCapacity> p;
  p.count = static_cast<uint32_t>(launch.pieces.size());
  for (uint32_t i = 0; i < p.count; ++i) {
    const CopyPiece& piece = launch.pieces[i];
    p.to[i] = piece.to;
    p.from[i] = piece.from;
    p.bytes[i] = piece.bytes;
    p.first_block[i] = piece.first_block;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(launch.blocks);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  return cudaLaunchKernelEx(&config, batched_copy<kCapacity>, p);
}

}  // namespace

cudaError_t launch_batched_copy(const CopyLaunch& launch, cudaStream_t stream) {
  if (launch.pieces.empty() || launch.blocks == 0) return cudaSuccess;
  if (launch.pieces.size() > kCopyPiecesPerLaunch) return cudaErrorInvalidValue;
  if (launch.pieces.size() <= kSmallLaunch) return launch_with<kSmallLaunch>(launch, stream);
  return launch_with<kCopyPiecesPerLaunch>(launch, stream);
}

}  // namespace chorus
