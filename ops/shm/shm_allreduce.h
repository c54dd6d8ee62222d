// ShmAllreduce: allreduce among the ranks of one host through a shared
// segment (ShmGroup), streamed in chunks.
//
// The data area holds two stages; each stage has one chunk-sized slot per
// rank and one result slot. For each chunk of the message:
//   1. copy in: every rank copies its chunk of the input into its own slot
//      and posts "arrived";
//   2. reduce-scatter: once all have arrived, rank r reads its share of the
//      chunk (about 1/n, cut at 64-byte lines) directly from every rank's
//      slot, folds the n inputs in rank order in one pass
//      (reduce_ranks_in_order) into the result slot, and posts "reduced";
//   3. allgather: once all have reduced, every rank copies the whole result
//      slot to its output.
// Chunks alternate between the stages, and a rank copies in chunk k+1 before
// it waits for the others to finish reducing chunk k, so copying overlaps
// waiting. Chunks are cache-sized: the slots stay in cache, and only the
// input and the output go to memory, once each.
//
// Why two stages suffice: a rank overwrites its slot of stage s with chunk
// k+1 only after all ranks reduced chunk k-1 (it waited for that), and a
// result slot is overwritten for chunk k+1 only after all ranks posted
// "arrived" for k+1, which each does after copying out chunk k-1.
//
// The result does not depend on timing or on the element's position: every
// element is combined in rank order. Every rank must call allreduce() with
// the same count, dtype and op, in the same order (the executor does).
// The chunk sequence numbers live in the group's counters (each rank's own
// counter is the number of chunks it has completed). One instance per group:
// instances with different chunk sizes would lay the stages out differently,
// and one rank's first copy-in could overwrite what a slower rank is still
// copying out.
// After a failure (a dead or stuck peer) the group's state is undefined and
// every later call of this instance fails with the same error.
#pragma once

#include <cstdint>
#include <string>

#include "chorus/status.h"
#include "chorus/types.h"
#include "ops/shm/shm_group.h"

namespace chorus {

class ShmAllreduce {
 public:
  // Bytes per rank per chunk: a few stages of every rank's slots fit in the
  // caches.
  static constexpr int64_t kDefaultChunkBytes = 256 << 10;
  // The data area a group needs for `ranks` ranks and `chunk_bytes` chunks.
  static size_t data_bytes(int ranks, int64_t chunk_bytes);

  // `group` must outlive this and have at least data_bytes() of data.
  // chunk_bytes: a positive multiple of 128.
  ShmAllreduce(ShmGroup* group, int64_t chunk_bytes = kDefaultChunkBytes);
  virtual ~ShmAllreduce() = default;

  // Reduces `count` elements of every rank's `input` into `output` on every
  // rank; input may equal output. op: kSum, kMin, kMax or kProduct.
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op);

 protected:
  // Called after this rank has copied in and announced chunk `chunk` of the
  // current allreduce (0-based). For tests, to inject a fault mid-collective.
  virtual void chunk_copied_in(int64_t chunk) { (void)chunk; }

 private:
  char* slot(uint64_t stage, int rank) const;
  char* result(uint64_t stage) const;
  Status check(const void* input, const void* output, int64_t count, DataType dtype, ReduceOp op) const;

  ShmGroup* group_;
  int64_t chunk_bytes_;
  Status broken_;             // the first failure; every later call returns it
};

}  // namespace chorus
