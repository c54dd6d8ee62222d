// Executor: runs one execution unit (a response, or several fused ones) on
// the backend chosen for its device among its process set's backends, and
// completes the entries' handles once its work is done. In a process set,
// "rank" and "size" are the set's (set ranks index its sorted members).
//
// It owns the data path around the collective, and does all of it through
// the device's operations (core/contracts/device.h), never touching memory itself:
// waiting for the inputs' producers, packing fused tensors into the device's
// persistent fusion buffer and unpacking them, prescaling, zeros for a
// joined rank, the integer average's division and an integer postscale, and
// allocating outputs whose size is known only now. The factor of a
// floating-point average and postscale goes to the backend, which applies
// it as it reduces (16-bit results round once).
//
// On a device everything is queued on one stream, in order, so a unit's work
// needs no waits in between. Work that has finished when the executor is
// done with the unit (host memory, always) completes the handles at once;
// otherwise the unit goes to the completion queue, whose thread completes
// them when the device is done, and the background thread moves on.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/completion_queue.h"
#include "runtime/fusion_buffer.h"
#include "runtime/fusion_planner.h"
#include "contracts/backend_registry.h"
#include "runtime/tensor_entry.h"
#include "runtime/tensor_queue.h"
#include "runtime/timeline.h"
#include "base/topology.h"

namespace chorus {

// The place of this rank in a set; false when it is not a member.
using SetResolver = std::function<bool(int32_t process_set, SetPlace* out)>;

class Executor {
 public:
  using Clock = std::chrono::steady_clock;
  // `on_failure`: a collective that finished after execute() returned failed
  // (called on the completion thread; failure() tells what).
  Executor(SetResolver resolve_set, Timeline* timeline, std::function<void()> on_failure)
      : resolve_set_(std::move(resolve_set)), timeline_(timeline), completions_(std::move(on_failure)) {}

  // Takes the unit's entries out of `queue` and starts its work. Errors go
  // to the entries' handles (an output this rank cannot allocate fails only
  // its entry: the collective still runs); a non-ok return means the backend
  // itself failed (the runtime then stops: ranks may disagree on what ran).
  Status execute(const ExecutionUnit& unit, TensorQueue* queue, Clock::time_point negotiated);
  // The first failure of a collective that finished after execute() returned.
  Status failure() const { return completions_.failure(); }
  bool failed() const { return completions_.failed(); }
  // Units whose work is still on a device.
  size_t in_flight() const { return completions_.in_flight(); }
  // Blocks until every unit started so far is complete.
  void drain() { completions_.drain(); }
  // Fails the handles of the unit execute() is running now, if any, with
  // `status`: the job lost a rank, and that collective may never end. From
  // any thread.
  void abandon_running(const Status& status);

 private:
  using Entries = std::vector<std::optional<TensorEntry>>;
  // One unit while it is being started.
  struct Run {
    const ExecutionUnit& unit;
    Entries& entries;
    Backend* backend;
    DeviceOps* device;
    SetPlace place;  // the unit's process set
  };
  // The persistent buffers of one device.
  struct DeviceBuffers {
    Device device;
    FusionBuffer fusion;
    FusionBuffer scratch;  // where a failed allocation's data goes
  };

  Status start(Run& run, WorkPtr* work);
  static int set_root(const Run& run, int root);
  Status allreduce(Run& run, WorkPtr* work);
  Status allreduce_one(Run& run, WorkPtr* work);
  // A fused allreduce the backend reduces where the tensors lie
  // (Backend::fuses_in_place): no copies through the fusion buffer.
  Status allreduce_in_place(Run& run, int64_t total, WorkPtr* work);
  // ReduceOp::kAdasum: the backend combines each tensor by its own dot
  // products (Backend::adasum), so it gets the tensors' sizes.
  Status adasum(Run& run, WorkPtr* work);
  Status allgather(Run& run, WorkPtr* work);
  Status allgather_fused(Run& run, WorkPtr* work);
  Status alltoall(Run& run, WorkPtr* work);
  Status reducescatter(Run& run, WorkPtr* work);

  // What a floating-point result is multiplied by: the postscale, divided
  // by the number of ranks for an average; 1 for integers. Every reduction
  // hands it to the backend, which applies it as it reduces.
  double result_factor(const Run& run, const Response& response) const;
  // After an integer reduction, on `count` elements of the result: the
  // postscale (times 1/size for an average), scaled as Horovod does, or
  // else the average's truncating division.
  Status finish_integer_result(Run& run, const Response& response, void* data, int64_t count);
  // A fused allreduce's or Adasum's members, one after the other in
  // `buffer`: each input copied there (scaled by `prescale` unless it is 1),
  // zeros for a joined rank's missing member; a member already in its place
  // is left there. Then the results copied back to each member's output.
  Status pack_fused(Run& run, void* buffer, double prescale);
  Status unpack_fused(Run& run, const void* buffer);
  // The output of entry `index` of the unit; when this rank cannot allocate
  // it, records the error for that entry and returns scratch memory (or no
  // memory, when the caller only copies into it) so the collective still runs.
  Status output_for(Run& run, size_t index, const Shape& shape, bool scratch_if_failed, Tensor* out);
  Status fusion_buffer(Run& run, size_t bytes, void** out);
  DeviceBuffers& buffers_of(const Device& device);
  void span(const Entries& entries, const ExecutionUnit& unit, const char* activity, Clock::time_point start,
            const TimelineArgs& args = {});

  SetResolver resolve_set_;
  Timeline* timeline_;
  std::vector<DeviceBuffers> buffers_;  // one per device used so far
  std::vector<AllreducePiece> pieces_;  // allreduce_in_place()'s, reused
  std::vector<DeviceOps::Copy> copies_;  // packing and unpacking, reused
  std::vector<int64_t> counts_;          // adasum()'s tensor sizes, reused
  std::vector<Status> own_errors_;      // per entry of the current unit
  CompletionQueue completions_;
  // The entries of the unit execute() is running; nullptr between units.
  std::mutex running_mutex_;
  Entries* running_ = nullptr;
};

// Allocates `shape` x `dtype` for an entry's output on `device`, through its
// allocator when it has one, else in memory the handle owns.
Status allocate_output(TensorEntry& entry, const Shape& shape, DeviceOps* device, Tensor* out);

}  // namespace chorus
