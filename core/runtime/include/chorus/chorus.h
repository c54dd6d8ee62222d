// Chorus public C++ API. Everything here throws chorus::Error with a message
// that names what was wrong; nothing may be called before init() or after
// shutdown() (except is_initialized()).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chorus/handle.h"
#include "chorus/process_set.h"
#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// Starts the runtime: initialises MPI unless the application already did (then
// it must provide MPI_THREAD_MULTIPLE, and shutdown() leaves MPI initialised),
// reads the CHORUS_* environment, and starts the background thread.
void init();
struct InitOptions {
  // Static process sets, created by init() on every rank in this order: the
  // i-th gets id i + 1 (see process_set.h; every rank passes the same list).
  std::vector<std::vector<int>> process_sets;
};
void init(const InitOptions& options);
// Stops the runtime. Collectives still waiting on other ranks fail with an
// error naming this rank. Safe to call twice. After the runtime stopped the
// job because ranks stopped responding (CHORUS_STALL_SHUTDOWN_SECONDS), it
// does not return: it ends the whole job (MPI_Abort, a non-zero status), since
// finalizing MPI would wait for those ranks.
void shutdown();
bool is_initialized();

int rank();
int size();
// A node is what the launcher calls one (a Slurm node, an mpirun host):
// see docs/DESIGN.md, "Nodes".
int local_rank();   // rank among the processes of this node
int local_size();
int cross_rank();   // index of this node among the nodes
int cross_size();

// True when a backend in this build runs collectives on tensors on `device`
// (the CPU; in a build with CUDA, this rank's own GPU when every rank has one:
// docs/DESIGN.md, "GPUs: binding, shared GPUs and the host-staged path").
// Every collective refuses other devices by itself; frameworks ask first,
// before they allocate or copy memory on the device.
bool supports(const Device& device);
// OK when supports(device); otherwise the kInvalidArgument error a collective
// on a tensor named `name` there gets, saying why: e.g. "tensor 'x' is on
// cuda:0 but this rank sees no CUDA device (...)", "... but this build of
// Chorus has no CUDA support (built with CHORUS_WITH_CUDA=OFF)", "tensor 'x'
// is on cuda:1 but this rank's device is cuda:0 (...)".
Status check_device(const std::string& name, const Device& device);

// Allocates the output of a collective whose output size is known only after
// negotiation (allgather, alltoall, reducescatter). It must return a tensor of
// exactly `shape` and `dtype` whose memory stays valid until the handle is
// done. When none is given, the runtime allocates and the handle owns it.
using OutputAllocator =
    std::function<Status(const Shape& shape, DataType dtype, Device device, Tensor* out)>;

// Scale factors (finite, the same on every rank) apply to every numeric
// dtype. Floating-point tensors are multiplied in their own precision
// (16-bit ones in float32, rounded once); integer tensors as Horovod does:
// each element converted to double, multiplied, truncated toward zero, and
// saturated at the dtype's bounds where Horovod's C++ is undefined. An
// integer kAverage with a postscale multiplies by postscale / size that way
// (Horovod's rule); without one it divides exactly, truncating toward zero.
struct AllreduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  double prescale_factor = 1.0;   // multiplies the input before the reduction
  double postscale_factor = 1.0;  // multiplies the result after it
  ProcessSet process_set;         // the ranks that reduce; kAverage divides by their number
};

// A reducescatter's reduction, scaled as an allreduce's (see above).
struct ReducescatterOptions {
  ReduceOp op = ReduceOp::kSum;
  double prescale_factor = 1.0;   // multiplies the input before the reduction
  double postscale_factor = 1.0;  // multiplies this rank's part of the result
  ProcessSet process_set;
};

// Allreduce of `input` into `output` (same shape and dtype; may be the same
// memory for in place). The name must be unique among collectives in flight
// on this rank and identical on every rank.
Handle allreduce_async(const std::string& name, const Tensor& input, const Tensor& output,
                       const AllreduceOptions& options = {});
inline Handle allreduce_async(const std::string& name, const Tensor& inout,
                              const AllreduceOptions& options = {}) {
  return allreduce_async(name, inout, inout, options);
}
// Tensors negotiated and fused as one unit; member i is named name + "." + i.
// The handle is done when every member is.
Handle grouped_allreduce_async(const std::string& name, const std::vector<Tensor>& inputs,
                               const std::vector<Tensor>& outputs,
                               const AllreduceOptions& options = {});
// Every collective below runs over `process_set` (the global set when
// omitted): only its members call it, and "rank" in its description means
// the index in process_set_ranks(); root_rank is a rank of the job (a
// member of the set). A rank outside the set that submits to it gets
// chorus::Error naming the set and its ranks.
//
// Concatenates every rank's input along the first dimension (which may differ
// between ranks); the other dimensions must match.
Handle allgather_async(const std::string& name, const Tensor& input,
                       OutputAllocator allocator = nullptr, const ProcessSet& process_set = {});
// Replaces `inout` on every rank with root_rank's `inout`.
Handle broadcast_async(const std::string& name, const Tensor& inout, int root_rank,
                       const ProcessSet& process_set = {});
// Sends splits[i] first-dimension rows of `input` to rank i (empty splits:
// equal parts); the output holds the rows received, ordered by rank.
Handle alltoall_async(const std::string& name, const Tensor& input,
                      const std::vector<int64_t>& splits = {}, OutputAllocator allocator = nullptr,
                      const ProcessSet& process_set = {});
// Reduces `input` (same shape on every rank) and gives each rank its part of
// the first dimension: rank r gets rows [begin_r, end_r), the first
// (rows % size) ranks one row more than the others.
Handle reducescatter_async(const std::string& name, const Tensor& input,
                           ReduceOp op = ReduceOp::kSum, OutputAllocator allocator = nullptr,
                           const ProcessSet& process_set = {});
Handle reducescatter_async(const std::string& name, const Tensor& input, const ReducescatterOptions& options,
                           OutputAllocator allocator = nullptr);
// Grouped forms, like grouped_allreduce_async: member i is named name + "."
// + i, the members are negotiated as one unit (a mismatch in any fails the
// whole group on every rank) and fused where they fit the fusion threshold.
// `allocators`: none (the runtime allocates), or one per input. The handle's
// outputs() holds each member's output, in member order.
Handle grouped_allgather_async(const std::string& name, const std::vector<Tensor>& inputs,
                               const std::vector<OutputAllocator>& allocators = {},
                               const ProcessSet& process_set = {});
Handle grouped_reducescatter_async(const std::string& name, const std::vector<Tensor>& inputs,
                                   ReduceOp op = ReduceOp::kSum,
                                   const std::vector<OutputAllocator>& allocators = {},
                                   const ProcessSet& process_set = {});
Handle grouped_reducescatter_async(const std::string& name, const std::vector<Tensor>& inputs,
                                   const ReducescatterOptions& options,
                                   const std::vector<OutputAllocator>& allocators = {});
// A joined rank takes part in the global set's barriers without calling them.
Handle barrier_async(const ProcessSet& process_set = {});
// Declares that this rank has no more data. Until every rank has joined, the
// other ranks' allreduces complete with this rank contributing zeros (an
// average still divides by every rank), their barriers and timeline control
// go on without it, and their other collectives of the global set
// (allgather, broadcast, alltoall, reducescatter) fail on every rank with an
// error naming the joined ranks instead of waiting for them (docs/DESIGN.md,
// "Join and the timeline at run time"). The handle's last_joined_rank() is
// the last rank to join.
Handle join_async();

// Blocking forms: wait and throw on error.
void allreduce(const std::string& name, const Tensor& input, const Tensor& output,
               const AllreduceOptions& options = {});
void allreduce(const std::string& name, const Tensor& inout, const AllreduceOptions& options = {});
void grouped_allreduce(const std::string& name, const std::vector<Tensor>& inputs,
                       const std::vector<Tensor>& outputs, const AllreduceOptions& options = {});
// Returns the handle so the caller can read output(); it is already done.
Handle allgather(const std::string& name, const Tensor& input, OutputAllocator allocator = nullptr,
                 const ProcessSet& process_set = {});
void broadcast(const std::string& name, const Tensor& inout, int root_rank,
               const ProcessSet& process_set = {});
Handle alltoall(const std::string& name, const Tensor& input, const std::vector<int64_t>& splits = {},
                OutputAllocator allocator = nullptr, const ProcessSet& process_set = {});
Handle reducescatter(const std::string& name, const Tensor& input, ReduceOp op = ReduceOp::kSum,
                     OutputAllocator allocator = nullptr, const ProcessSet& process_set = {});
Handle reducescatter(const std::string& name, const Tensor& input, const ReducescatterOptions& options,
                     OutputAllocator allocator = nullptr);
Handle grouped_allgather(const std::string& name, const std::vector<Tensor>& inputs,
                         const std::vector<OutputAllocator>& allocators = {}, const ProcessSet& process_set = {});
Handle grouped_reducescatter(const std::string& name, const std::vector<Tensor>& inputs,
                             ReduceOp op = ReduceOp::kSum, const std::vector<OutputAllocator>& allocators = {},
                             const ProcessSet& process_set = {});
Handle grouped_reducescatter(const std::string& name, const std::vector<Tensor>& inputs,
                             const ReducescatterOptions& options,
                             const std::vector<OutputAllocator>& allocators = {});
void barrier(const ProcessSet& process_set = {});
// Returns the last rank to join.
int join();

// The timeline at run time: rank 0 writes the Chrome trace that
// CHORUS_TIMELINE writes (docs/DESIGN.md, "Join and the timeline at run
// time") to `path`, of the collectives negotiated after this call and before
// stop_timeline(), with a CYCLE_START marker at each negotiation cycle when
// `mark_cycles`. Both are collective over the job (a joined rank takes part
// without calling them): every rank calls them with the same arguments, and
// every rank starts and stops at the same point of the response order. They
// throw on every rank alike when ranks disagree on the arguments, when a
// timeline is already being written (by CHORUS_TIMELINE or start_timeline()),
// when none is (stop), and when rank 0 cannot open `path` for writing.
void start_timeline(const std::string& path, bool mark_cycles = false);
// Rank 0's file is a complete JSON array once this returns on any rank.
void stop_timeline();

// Point-to-point, outside the negotiation: a message goes straight to its
// peer, from the calling thread, whatever the background thread is doing.
// `dest_rank` receives it with recv_async(name, ..., this rank); between two
// ranks, messages of one name are received in the order they were sent.
// `tensor` stays untouched until the handle is done.
Handle send_async(const std::string& name, const Tensor& tensor, int dest_rank);
// Receives into `tensor`, whose dtype and shape must be those the sender
// sent: otherwise the handle fails with an error naming both ranks and both
// dtypes and shapes. A sender that died or shut down fails it naming that
// rank, never a hang.
Handle recv_async(const std::string& name, const Tensor& tensor, int source_rank);
void send(const std::string& name, const Tensor& tensor, int dest_rank);
void recv(const std::string& name, const Tensor& tensor, int source_rank);

}  // namespace chorus
