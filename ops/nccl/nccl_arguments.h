// The NCCL backend's argument checks and the layouts of its per-rank
// collectives, GPU-free (unit-tested without a device). NCCL takes counts as
// size_t; Chorus passes int64_t. A count must be non-negative and its bytes,
// and the running offsets of per-rank blocks, must be addressable (fit in
// int64_t, hence in size_t and in pointer arithmetic): anything beyond is
// refused with InvalidArgument naming the collective, the argument and the
// limit, before a single NCCL call. The checks see each rank's own arguments
// only, like the MPI backend's: ranks must be called alike (negotiation
// sees to that), or the others wait for NCCL until the timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chorus/status.h"

namespace chorus {

// A count of elements of `element_size` bytes that NCCL can take: in
// [0, max_elements(element_size)].
Status check_count(const char* collective, const char* what, int64_t count, size_t element_size);
// The most elements of `element_size` bytes whose bytes fit in int64_t.
int64_t max_elements(size_t element_size);

// InvalidArgument("<collective>: <which> is null but holds <count> elements")
// when `pointer` is null and count > 0.
Status check_buffer(const char* collective, const char* which, const void* pointer, int64_t count);

// Per-rank blocks laid end to end in rank order (allgatherv's output,
// alltoallv's input and output, reducescatter's input).
struct RankBlocks {
  std::vector<size_t> counts;   // elements of rank r's block
  std::vector<size_t> offsets;  // where it starts, in elements
  size_t total = 0;             // elements of all blocks
  bool equal = false;           // every block has counts[0] elements
};
// Checks `counts` (one per rank of `size`, each a valid count, the total
// too) and lays the blocks out.
Status rank_blocks(const char* collective, const char* what, const std::vector<int64_t>& counts, int size,
                   size_t element_size, RankBlocks* out);

// A root rank in [0, size).
Status check_root(const char* collective, int root, int size);

// Byte offsets without signed overflow (callers checked the sizes).
inline const void* advance(const void* base, size_t elements, size_t element_size) {
  return static_cast<const char*>(base) + elements * element_size;
}
inline void* advance(void* base, size_t elements, size_t element_size) {
  return static_cast<char*>(base) + elements * element_size;
}

}  // namespace chorus
