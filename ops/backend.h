// Backend: what the executor runs a negotiated collective on. One backend
// serves the tensors of some devices (host memory; a GPU's); the registry
// picks the first that supports a response's device.
//
// A backend gives the executor two things: the device's memory operations
// (DeviceOps: buffers, packing, scaling), and the collectives, each of which
// returns work that may finish later. On a device both go on one stream, in
// the order they are asked for, so the executor packs, reduces and unpacks
// without waiting in between, and completes the handles once the work is
// done. Host collectives (HostBackend) finish before they return.
//
// Adding a backend (NCCL, say): implement DeviceOps for the device (its
// stream, its allocator, its kernels) and this interface with the
// transport's collectives enqueued on that stream; return work whose test()
// asks the stream. Register it in Communication::start ahead of the host
// backend. docs/DESIGN.md walks through it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"
#include "ops/device.h"
#include "ops/host_collectives.h"
#include "ops/work.h"

namespace chorus {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual bool supports(const Device& device) const = 0;
  // The memory operations of `device` (which supports() accepted), on the
  // stream this backend's collectives run on.
  virtual DeviceOps* device_ops(const Device& device) = 0;

  // Like every collective, all ranks call these with the same arguments. A
  // reduction's result is multiplied by `factor` (1 for integer dtypes);
  // op is kSum, kMin, kMax or kProduct. input == output means in place.
  virtual WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                            double factor) = 0;
  // Whether a fused message of `count` elements is reduced straight from
  // and into the tensors (allreduce_pieces) instead of through the
  // executor's fusion buffer: the same answer on every rank.
  virtual bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const;
  virtual WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                   double factor);
  // Concatenates rank r's counts[r] elements of `input` into `output`.
  virtual WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                             DataType dtype) = 0;
  virtual WorkPtr broadcast(void* buffer, int64_t bytes, int root) = 0;
  // recv_counts[r] = what rank r passed as send_counts[this rank]. Finished
  // when it returns: the executor sizes an alltoall's output with it.
  virtual Status exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) = 0;
  virtual WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                            const std::vector<int64_t>& recv_counts, DataType dtype) = 0;
  // Leaves rank r's recv_counts[r] reduced elements, times `factor`, in
  // `output` (at its start when output == input).
  virtual WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                DataType dtype, ReduceOp op, double factor) = 0;
  virtual WorkPtr barrier() = 0;

  // The allreduce algorithms it can switch between, the one in use first;
  // the autotuner chooses among them (HostCollectives::allreduce_algorithms).
  virtual std::vector<std::string> allreduce_algorithms() const { return {name()}; }
  virtual Status use_allreduce_algorithm(const std::string& algorithm);
};

}  // namespace chorus
