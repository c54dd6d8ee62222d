// What one thread block of the batched-copy kernel does (batched_copy.cu),
// written as host-and-device functions of (thread, threads) so that a host
// test can run a launch block by block, thread by thread, without a GPU:
// the threads of a block write disjoint bytes, so running them one after
// another gives what a GPU gives.
#pragma once

#include <vector_types.h>  // uint2, uint4: CUDA's aligned vector words

#include <cstdint>

#include "ops/cuda/batched_copy.h"
#include "ops/kernels/host_and_device.h"

namespace chorus {

// The piece that block `block` copies: the last one whose first block is at
// or before it (first_block[0] is 0 and rises).
CHORUS_HOST_DEVICE inline uint32_t piece_of_block(const uint32_t* first_block, uint32_t count, uint32_t block) {
  uint32_t low = 0;
  uint32_t high = count - 1;
  while (low < high) {
    const uint32_t middle = (low + high + 1) / 2;
    if (first_block[middle] <= block) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

// Loads each thread issues before its stores: memory latency is hidden by
// several words in flight, not by one at a time.
constexpr unsigned kCopyUnroll = 4;

// `n` bytes from `from` (zeros if kZeros) to `to` by `threads` threads, this
// one being `thread`, in Words where both are Word-aligned: `to` and `from`
// must be equally misaligned to a Word. The bytes before `to`'s first Word
// boundary and after its last one go one by one.
template <typename Word, bool kZeros>
CHORUS_HOST_DEVICE inline void copy_words(char* to, const char* from, uint64_t n, unsigned thread, unsigned threads) {
  constexpr uint64_t kSize = sizeof(Word);
  const uint64_t to_boundary = (kSize - reinterpret_cast<uintptr_t>(to) % kSize) % kSize;
  const uint64_t head = to_boundary < n ? to_boundary : n;
  const uint64_t words = (n - head) / kSize;
  const uint64_t tail = head + words * kSize;
  for (uint64_t i = thread; i < head; i += threads) to[i] = kZeros ? 0 : from[i];
  for (uint64_t i = tail + thread; i < n; i += threads) to[i] = kZeros ? 0 : from[i];

  Word* dst = reinterpret_cast<Word*>(to + head);
  const Word* src = kZeros ? nullptr : reinterpret_cast<const Word*>(from + head);
  uint64_t i = thread;
  for (; i + (kCopyUnroll - 1) * threads < words; i += kCopyUnroll * threads) {
    Word values[kCopyUnroll];
    for (unsigned u = 0; u < kCopyUnroll; ++u) values[u] = kZeros ? Word{} : src[i + u * threads];
    for (unsigned u = 0; u < kCopyUnroll; ++u) dst[i + u * threads] = values[u];
  }
  for (; i < words; i += threads) dst[i] = kZeros ? Word{} : src[i];
}

// Block `block_in_piece` of a piece: its kCopyBytesPerBlock bytes from
// block_in_piece * kCopyBytesPerBlock on (fewer at the piece's end), in the
// widest word to which source and destination are equally aligned.
CHORUS_HOST_DEVICE inline void copy_block(char* to, const char* from, uint64_t bytes, uint32_t block_in_piece,
                                          unsigned thread, unsigned threads) {
  const uint64_t offset = static_cast<uint64_t>(block_in_piece) * kCopyBytesPerBlock;
  const uint64_t left = bytes - offset;
  const uint64_t n = left < kCopyBytesPerBlock ? left : kCopyBytesPerBlock;
  to += offset;
  if (from == nullptr) {
    copy_words<uint4, true>(to, nullptr, n, thread, threads);
    return;
  }
  from += offset;
  // Equal low address bits: both reach a word boundary after the same bytes.
  const uintptr_t differ = reinterpret_cast<uintptr_t>(to) ^ reinterpret_cast<uintptr_t>(from);
  if ((differ & 15) == 0) {
    copy_words<uint4, false>(to, from, n, thread, threads);
  } else if ((differ & 7) == 0) {
    copy_words<uint2, false>(to, from, n, thread, threads);
  } else if ((differ & 3) == 0) {
    copy_words<uint32_t, false>(to, from, n, thread, threads);
  } else if ((differ & 1) == 0) {
    copy_words<uint16_t, false>(to, from, n, thread, threads);
  } else {
    copy_words<uint8_t, false>(to, from, n, thread, threads);
  }
}

}  // namespace chorus
