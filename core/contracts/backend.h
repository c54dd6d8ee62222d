// Backend: what the executor runs a negotiated collective on. One backend
// serves the tensors of some devices (host memory; a GPU's); the registry
// picks the first that supports a response's device.
//
// A backend gives the executor two things: the device's memory operations
// (DeviceOps: buffers, packing, scaling), and the collectives, each of which
// returns work that may finish later. On a device both go on one stream, in
// the order they are asked for, so the executor packs, reduces and unpacks
// without waiting in between, and completes the handles once the work is
// done. Host memory's backends (HostBackend: MPI, shared memory, the
// hierarchical path) finish their collectives before they return.
//
// Adding a backend: implement DeviceOps for the device (its stream, its
// allocator, its kernels) and this interface with the transport's
// collectives enqueued on that stream; return work whose test() asks the
// stream. Register it in MpiCommunication::start ahead of the host backend.
// ops/nccl/ is the worked example (docs/DESIGN.md, "The NCCL backend").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "contracts/device.h"
#include "contracts/work.h"

namespace chorus {

// One tensor of a fused allreduce that stays where it is: `count` elements
// read from `input`, the result written to `output` (may equal input).
struct AllreducePiece {
  const void* input;
  void* output;
  int64_t count;
};

// Whether any two pieces share memory (a piece whose input is its output
// counts once; null pointers, placeholders for memory yet to be given, are
// skipped): a backend that writes one piece's result before it has read
// every input would then read a result instead of an input.
bool pieces_overlap(const std::vector<AllreducePiece>& pieces, size_t element_bytes);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual bool supports(const Device& device) const = 0;
  // The memory operations of `device` (which supports() accepted), on the
  // stream this backend's collectives run on.
  virtual DeviceOps* device_ops(const Device& device) = 0;
  // Whether any thread may run its collectives: they work on host memory
  // and leave no state behind in the thread (a GPU's current device, say).
  // Only then does a framework thread that waits for a result run the
  // runtime's cycles itself (runtime/cycle_token.h).
  virtual bool runs_on_any_thread() const { return false; }

  // Like every collective, all ranks call these with the same arguments. A
  // reduction's result is multiplied by `factor` (an average's 1/size and a
  // postscale; 1 for integer dtypes), as the backend reduces where it can,
  // so that float16 and bfloat16 results are rounded once; op is kSum, kMin,
  // kMax or kProduct (the executor turns kAverage into kSum and a factor).
  // input == output means in place.
  virtual WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                            double factor) = 0;
  // OK when this backend's reductions (allreduce, reducescatter) take
  // `dtype` (bool aside, which the API refuses for every backend);
  // otherwise an InvalidArgument saying why, whose text completes
  // "'<tensor>': ". The API asks before it submits, so every rank refuses
  // alike instead of one backend failing mid-job. Default: OK.
  virtual Status check_reduction(DataType dtype) const;
  // Fusion without a staging buffer: an algorithm that copies its input into
  // memory of its own anyway (shared memory) can gather a fused message
  // straight from the tensors and scatter the result back, saving the
  // executor's copies into and out of its fusion buffer. Whether this
  // backend does so for a fused message of `count` elements (the same answer
  // on every rank); the default: no. allreduce_pieces() is then allreduce()
  // of the pieces' concatenation, each piece's result in its own output.
  virtual bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const;
  virtual WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                   double factor);
  // Adasum (ReduceOp::kAdasum, ops/mpi/adasum.h) of a message of
  // counts.size() tensors lying one after another in `buffer` (counts[i]
  // elements each), in place, each tensor combined by its own dot products;
  // the result times `factor`. dtype float16, bfloat16, float32 or float64.
  // The backends over MPI on host memory run it; the default fails naming
  // this backend.
  virtual WorkPtr adasum(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor);
  // Concatenates rank r's counts[r] elements of `input` into `output`, in
  // rank order.
  virtual WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                             DataType dtype) = 0;
  // Copies root's `bytes` bytes of `buffer` to every rank.
  virtual WorkPtr broadcast(void* buffer, int64_t bytes, int root) = 0;
  // recv_counts[r] = what rank r passed as send_counts[this rank]. Finished
  // when it returns: the executor sizes an alltoall's output with it.
  virtual Status exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) = 0;
  // Sends send_counts[r] elements (consecutive, in rank order) to rank r and
  // receives recv_counts[r] elements from rank r into `output` in rank order.
  virtual WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                            const std::vector<int64_t>& recv_counts, DataType dtype) = 0;
  // Leaves rank r's recv_counts[r] reduced elements, times `factor`, in
  // `output` (at its start when output == input).
  virtual WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                DataType dtype, ReduceOp op, double factor) = 0;
  virtual WorkPtr barrier() = 0;

  // The allreduce algorithms it can switch between, by name, the one in use
  // at the start first (the same on every rank); the autotuner chooses among
  // them. One, its own name, unless it has a choice.
  virtual std::vector<std::string> allreduce_algorithms() const { return {name()}; }
  // Runs allreduces with `algorithm` (one of the names above) from now on;
  // called between cycles, by every rank alike.
  virtual Status use_allreduce_algorithm(const std::string& algorithm);

  // The job is failing: end this backend's outstanding work with an error
  // now (work in flight on a device, which a dead peer would otherwise keep
  // waiting), and fail every later collective naming `reason`. Called from
  // any thread. Host backends finish their work before they return and have
  // nothing to end.
  virtual void abort(const std::string& reason) { (void)reason; }
};

}  // namespace chorus
