#include "ops/cuda/batched_copy.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace chorus {
namespace {

constexpr unsigned kThreads = 256;
// Loads each thread issues before its stores: memory latency is hidden by
// several words in flight, not by one at a time.
constexpr unsigned kUnroll = 4;
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

// `n` bytes from `from` (zeros if kZeros) to `to`, by the block's threads
// together, in Words where both are aligned to a Word: the bytes before
// `to`'s first Word boundary and after its last one go one by one. The
// caller picks a Word to which `to` and `from` are equally misaligned.
template <typename Word, bool kZeros>
__device__ void copy_words(char* __restrict__ to, const char* __restrict__ from, uint64_t n) {
  constexpr uint64_t kSize = sizeof(Word);
  const uint64_t to_boundary = (kSize - reinterpret_cast<uintptr_t>(to) % kSize) % kSize;
  const uint64_t head = to_boundary < n ? to_boundary : n;
  const uint64_t words = (n - head) / kSize;
  const uint64_t tail = head + words * kSize;
  for (uint64_t i = threadIdx.x; i < head; i += blockDim.x) to[i] = kZeros ? 0 : from[i];
  for (uint64_t i = tail + threadIdx.x; i < n; i += blockDim.x) to[i] = kZeros ? 0 : from[i];

  Word* __restrict__ dst = reinterpret_cast<Word*>(to + head);
  const Word* __restrict__ src = kZeros ? nullptr : reinterpret_cast<const Word*>(from + head);
  const uint64_t stride = blockDim.x;
  uint64_t i = threadIdx.x;
  for (; i + (kUnroll - 1) * stride < words; i += kUnroll * stride) {
    Word values[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) values[u] = kZeros ? Word{} : src[i + u * stride];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) dst[i + u * stride] = values[u];
  }
  for (; i < words; i += stride) dst[i] = kZeros ? Word{} : src[i];
}

// Each block copies one block-sized part of one piece: the last piece whose
// first block is at or before it (a binary search every thread makes alike
// over the parameters, which the constant cache broadcasts).
template <size_t kCapacity>
__global__ void __launch_bounds__(kThreads) batched_copy(const __grid_constant__ CopyParameters<kCapacity> p) {
  uint32_t low = 0;
  uint32_t high = p.count - 1;
  while (low < high) {
    const uint32_t middle = (low + high + 1) / 2;
    if (p.first_block[middle] <= blockIdx.x) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  const uint64_t offset = static_cast<uint64_t>(blockIdx.x - p.first_block[low]) * kCopyBytesPerBlock;
  const uint64_t left = p.bytes[low] - offset;
  const uint64_t n = left < kCopyBytesPerBlock ? left : kCopyBytesPerBlock;
  char* to = p.to[low] + offset;
  if (p.from[low] == nullptr) {
    copy_words<uint4, true>(to, nullptr, n);
    return;
  }
  const char* from = p.from[low] + offset;
  // Equal low address bits: both reach a Word boundary after the same bytes.
  const uintptr_t differ = reinterpret_cast<uintptr_t>(to) ^ reinterpret_cast<uintptr_t>(from);
  if ((differ & 15) == 0) {
    copy_words<uint4, false>(to, from, n);
  } else if ((differ & 7) == 0) {
    copy_words<uint2, false>(to, from, n);
  } else if ((differ & 3) == 0) {
    copy_words<uint32_t, false>(to, from, n);
  } else if ((differ & 1) == 0) {
    copy_words<uint16_t, false>(to, from, n);
  } else {
    copy_words<uint8_t, false>(to, from, n);
  }
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
