// Executor: runs one execution unit (a response, or several fused ones) on
// the backend chosen for its device, and completes the entries' handles.
// It owns the data-path details the backends do not: packing fused tensors
// into the persistent fusion buffer, prescale, the factor of postscale and
// kAverage (which the backend applies as it reduces), zeros for a joined
// rank, and allocating outputs whose size is known only now.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "fusion_buffer.h"
#include "fusion_planner.h"
#include "ops/backend_registry.h"
#include "tensor_entry.h"
#include "tensor_queue.h"
#include "timeline.h"
#include "topology.h"

namespace chorus {

class Executor {
 public:
  using Clock = std::chrono::steady_clock;
  Executor(const Topology& topology, const BackendRegistry* backends, Timeline* timeline)
      : topology_(topology), backends_(backends), timeline_(timeline) {}

  // Takes the unit's entries out of `queue` and completes them. Errors go to
  // the entries' handles (an output this rank cannot allocate fails only its
  // entry: the collective still runs); a non-ok return means the backend
  // itself failed (the runtime then stops: ranks may disagree on what ran).
  Status execute(const ExecutionUnit& unit, TensorQueue* queue, Clock::time_point negotiated);

 private:
  using Entries = std::vector<std::optional<TensorEntry>>;
  Status allreduce(const ExecutionUnit& unit, Entries& entries, Backend* backend);
  Status allreduce_one(const Response& response, TensorEntry* entry, Backend* backend);
  // A fused allreduce the backend reduces where the tensors lie
  // (Backend::fuses_in_place): no copies through the fusion buffer.
  Status allreduce_in_place(const ExecutionUnit& unit, Entries& entries, Backend* backend);
  Status allgather(const Response& response, TensorEntry& entry, Backend* backend);
  Status alltoall(TensorEntry& entry, Backend* backend);
  Status reducescatter(const ExecutionUnit& unit, Entries& entries, Backend* backend);
  // What the reduced sum is multiplied by: the postscale, divided by the
  // number of ranks for a floating-point average (1 for integers). Every
  // reduction hands it to the backend (allreduce_scaled,
  // reducescatter_scaled), which applies it as it reduces, so float16 and
  // bfloat16 results are rounded once and not again by a pass of its own.
  double result_factor(const Response& response) const;
  // Copies `count` reduced (and scaled) elements from `from` to `to` (which
  // may be equal) and divides an integer average, truncating.
  Status finish_reduction(const Response& response, const void* from, void* to, int64_t count);
  void span(const Entries& entries, const ExecutionUnit& unit, const char* activity,
            Clock::time_point start, const std::string& args = "");

  Topology topology_;
  const BackendRegistry* backends_;
  Timeline* timeline_;
  // The output of entry `index` of the unit; when this rank cannot allocate
  // it, records the error for that entry and returns scratch memory (or no
  // memory, when the caller only copies into it) so the collective still runs.
  Tensor output_for(TensorEntry& entry, size_t index, const Shape& shape, bool scratch_if_failed);

  FusionBuffer fusion_buffer_;
  FusionBuffer scratch_;                // where a failed allocation's data goes
  std::vector<AllreducePiece> pieces_;  // allreduce_in_place()'s, reused
  std::vector<Status> own_errors_;      // per entry of the current unit
};

// Allocates `shape` x `dtype` for an entry's output, through its allocator
// when it has one, else in memory the handle owns.
Status allocate_output(TensorEntry& entry, const Shape& shape, Tensor* out);

}  // namespace chorus
