// ShmAllreduce: allreduce among the ranks of one host through a shared
// segment (ShmGroup), streamed in chunks.
//
// Every chunk of the message is cut into n shares (about 1/n each, at 64-byte
// lines); rank r owns share r. The data area holds three stages of one
// chunk-sized slot per rank. For each chunk:
//   1. copy in: every rank copies the shares it does not own from its input
//      into its own slot and posts "arrived";
//   2. reduce-scatter: once all have arrived, rank r folds share r of its own
//      input (read in place) and of every peer's slot, in rank order
//      (reduce_ranks_in_order), into share r of its output; an optional
//      cross-host step (the hierarchical allreduce) transforms that share;
//      the share is multiplied by the factor (an average's 1/size), then
//      rank r publishes it in share r of its own slot and posts "reduced".
//      Without a cross-host step the fold multiplies by the factor in its
//      own pass (reduce_ranks_in_order_to), so float16/bfloat16 results are
//      rounded once. A cross-host step needs the share in the dtype (16-bit
//      values cross hosts), so there the fold, the step and the scaling
//      each round a 16-bit result;
//   3. allgather: once all have reduced, every rank copies share p of rank
//      p's slot into its output, for every peer p.
// A rank copies in chunk k+1 before it waits for the others to reduce chunk
// k, so copying overlaps waiting. Chunks are cache-sized: slots stay in cache
// and the input and output go to memory about once each.
//
// A fused message is reduced where its tensors lie (the pieces): the copy in
// gathers from them and the copy out scatters to them, as the one-tensor case
// reads its input and writes its output, so no staging buffer is needed.
//
// Why every write lands where it is cheap: a rank writes only its own slot
// and its own output. Reducing into a slot line that peers have just read
// costs a cross-core invalidation per line, which made the reduce step ~3x
// slower than the same kernel on private memory; the owner's share is
// therefore reduced into its private output and published with one memcpy.
// Storing each folded block to the slot as well, from inside the fold, was
// slower than that memcpy (docs/MEASUREMENTS.md, "Publishing with memcpy"):
// memcpy writes whole lines without reading them first.
// From the fourth chunk of a message on, a slot is rewritten while the peers
// that just read it still hold its lines; those copies into slots use
// streaming stores (ops/kernels/streaming_copy.h), faster for large
// messages (docs/MEASUREMENTS.md, "Streaming stores into reused slots").
//
// Why three stages suffice: a rank overwrites its slot of chunk k's stage
// with chunk k+3 after it has waited for every rank to arrive at chunk k+2,
// and a rank copies in chunk k+2 only after it has copied out chunk k, the
// last time anyone reads that slot for chunk k.
//
// A message of up to ShmAllreduceOptions::one_stage_bytes that fits in one
// chunk (without a cross-host step) takes one stage instead: every rank copies all
// of it into its slot, posts "arrived", and once all have arrived folds every
// rank's slot, in rank order, into its own output. Each rank reads n copies
// instead of one share and the result, but the ranks meet once instead of
// twice, and for a small message the meeting is most of the time
// (docs/MEASUREMENTS.md, "One meeting for a small allreduce"). A rank still
// posts "reduced" so that the counters stay in step with the chunked path;
// the slot rule above holds as it is, since a rank reads the peers' slots of
// a one-stage call before it copies in its next chunk.
//
// The result does not depend on timing or on the element's position: every
// element is combined in rank order. Every rank must call allreduce() with
// the same count, dtype, op and cross-host step, in the same order (the
// executor does). The chunk sequence numbers live in the group's counters
// (each rank's own counter is the number of chunks it has completed). One
// instance per group: instances with different chunk sizes would lay the
// stages out differently, and one rank's first copy-in could overwrite what
// a slower rank is still copying out.
// After a failure (a dead or stuck peer, a failed cross-host step) the
// group's state is undefined and every later call of this instance fails
// with the same error; the failing rank posts it (ShmSignals::post_failure),
// so peers waiting for it fail at once instead of at the timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "contracts/backend.h"
#include "ops/shm/shm_group.h"

namespace chorus {

struct ShmAllreduceOptions {
  // Bytes per rank per chunk, a positive multiple of 128: a few stages of
  // every rank's slots fit in the caches.
  int64_t chunk_bytes = 256 << 10;
  // How long a rank waits for a live peer (the group's ShmSignals); a dead
  // one is an error within milliseconds. Ranks enter a collective only after
  // negotiation agreed on it, so a peer this late is stuck (stopped, say).
  std::chrono::milliseconds peer_timeout{300'000};
  // How copies into a slot store from a message's fourth chunk on: streaming
  // (non-temporal) stores or plain memcpy. Which is faster depends on the
  // CPU's memory system (faster on the AMD EPYC VM, slower on the Intel Xeon
  // one: docs/MEASUREMENTS.md), so the start-up probe (shm_probe.h) picks it.
  bool streaming_stores = true;
  // Messages of up to this many bytes (and no more than one chunk) take the
  // one-stage path above. Where it pays depends on the machine and on how
  // many ranks share its cores (on the 2-core AMD VM: ~10% faster at 4 KiB
  // and slower from 8 KiB at np=2, 30-45% faster up to 64 KiB at np=4), so
  // the start-up probe measures it; this default serves when nothing was
  // probed.
  int64_t one_stage_bytes = 4 << 10;
};

class ShmAllreduce {
 public:
  // The data area a group needs for `ranks` ranks and `chunk_bytes` chunks.
  static size_t data_bytes(int ranks, int64_t chunk_bytes);

  // `group` must outlive this and have at least data_bytes() of data for
  // the options' chunk size.
  explicit ShmAllreduce(ShmGroup* group, const ShmAllreduceOptions& options = {});
  virtual ~ShmAllreduce() = default;

  // Runs on this rank's reduced share of each chunk before it is published
  // (`count` elements of the allreduce's dtype, in place); the same share of
  // the same chunk on every host gets the same call. An error aborts the
  // allreduce. Used to reduce across hosts (HierarchicalAllreduce).
  using ShareStep = std::function<Status(void* share, int64_t count)>;

  // Reduces `count` elements of every rank's `input` into `output` on every
  // rank; input may equal output. op: kSum, kMin, kMax or kProduct. The
  // result is multiplied by `factor` (floating-point dtypes only; after the
  // share step), each rank scaling the share it owns.
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                   const ShareStep& after_reduce = nullptr, double factor = 1.0);
  // The same for the concatenation of `pieces` (a fused message), read from
  // and written to the pieces themselves. The share step runs on each part
  // of a share that lies in one piece.
  Status allreduce(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                   const ShareStep& after_reduce = nullptr, double factor = 1.0);

  // Changes the store mode between allreduces (every rank alike).
  void set_streaming_stores(bool streaming) { streaming_stores_ = streaming; }
  bool streaming_stores() const { return streaming_stores_; }
  // Changes the one-stage limit between allreduces (every rank alike).
  void set_one_stage_bytes(int64_t bytes) { one_stage_bytes_ = bytes; }
  int64_t one_stage_bytes() const { return one_stage_bytes_; }

 protected:
  // Called after this rank has copied in and announced chunk `chunk` of the
  // current allreduce (0-based). For tests, to inject a fault mid-collective.
  virtual void chunk_copied_in(int64_t chunk) { (void)chunk; }

 private:
  char* slot(uint64_t sequence, int rank) const;
  // The one-stage path for a message of `bytes` that fits one slot.
  Status allreduce_one_stage(const std::vector<AllreducePiece>& pieces, int64_t bytes, DataType dtype,
                             ReduceOp op, double factor);
  Status check(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op, double factor) const;

  ShmGroup* group_;
  int64_t chunk_bytes_;
  int64_t one_stage_bytes_;
  bool streaming_stores_;
  Status broken_;             // the first failure; every later call returns it
};

}  // namespace chorus
