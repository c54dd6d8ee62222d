// Collectives on LibTorch tensors. Each async op returns a TorchHandle that
// keeps every tensor it needs alive until the collective is done; wait()
// returns the result as a torch::Tensor. Contiguous tensors of a supported
// dtype go to the runtime without a copy; anything else is copied to a
// contiguous tensor first (and, for in-place ops, copied back by wait()).
// Outputs are allocated on the input's device.
//
// Supported dtypes: uint8, int8, int16, int32, int64, float16, bfloat16,
// float32, float64, and bool for broadcast and allgather. (Chorus's uint16
// has no torch dtype in LibTorch 1.13, which has no unsigned 16-bit type;
// torch.uint16 arrived in 2.3, and maps to it there.) Any other dtype, or a tensor
// that is undefined, is a chorus::Error naming the tensor and the dtype.
// Supported devices: those a backend of this rank serves (chorus::supports():
// the CPU; with a GPU backend, the rank's own GPU). A tensor on any other
// device is refused before anything is submitted, with the same error on
// every path of the torch front end (these ops, DistributedOptimizer, state
// broadcast), kInvalidArgument: for a CUDA tensor the runtime's reason
// (chorus::check_device: "tensor '<name>' is on cuda:0 but this rank sees no
// CUDA device (...)"); for a device Chorus has no kind for, "tensor '<name>'
// is on device <device>: no backend in this build supports tensors on
// <device>".
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {

namespace detail {
struct PendingOp;
}

// The caller's end of one collective on torch tensors.
class TorchHandle {
 public:
  TorchHandle() = default;
  explicit TorchHandle(std::shared_ptr<detail::PendingOp> op) : op_(std::move(op)) {}

  bool valid() const { return op_ != nullptr; }
  const std::string& name() const;
  // Returns the result once it may be used (the output tensor; for an
  // in-place op the caller's tensor, now holding the result). Throws
  // chorus::Error with the runtime's message when the collective failed.
  // A grouped op returns its first output; use outputs() for all.
  // CPU tensors: blocks until done. CUDA tensors (with a CUDA LibTorch):
  // blocks only until the collective is queued on the GPU; the device's
  // current stream waits for it, as after c10d's work.wait(), so work queued
  // on that stream afterwards sees the result. An error the GPU reports
  // later shows in status().
  ::torch::Tensor wait() const;
  // Like wait(), but returns false (and no result) after `timeout`.
  bool wait_for(std::chrono::milliseconds timeout) const;
  // Never blocks: true once done (successfully or not).
  bool test() const;
  bool poll() const { return test(); }
  Status status() const;

  // Valid after wait(): every output of a grouped op, in member order (one
  // otherwise).
  std::vector<::torch::Tensor> outputs() const;
  // alltoall: rows received from each rank (valid after wait(); for CUDA
  // tensors it waits on the host for the collective to end).
  std::vector<int64_t> received_splits() const;
  // The core handle underneath.
  const chorus::Handle& handle() const;

 private:
  const detail::PendingOp& op() const;
  std::shared_ptr<detail::PendingOp> op_;
};

// Maps a torch dtype to a chorus dtype; throws chorus::Error naming `what`
// (usually the tensor name) for an unsupported one.
DataType to_chorus_dtype(c10::ScalarType type, const std::string& what);
c10::ScalarType to_torch_dtype(DataType dtype);

// Allreduce into a new tensor (out of place) or into `tensor` itself (the
// trailing underscore, as in LibTorch, means in place).
TorchHandle allreduce_async(const ::torch::Tensor& tensor, const std::string& name,
                            const AllreduceOptions& options = {});
TorchHandle allreduce_async_(const ::torch::Tensor& tensor, const std::string& name,
                             const AllreduceOptions& options = {});
::torch::Tensor allreduce(const ::torch::Tensor& tensor, const std::string& name,
                          const AllreduceOptions& options = {});
void allreduce_(const ::torch::Tensor& tensor, const std::string& name,
                const AllreduceOptions& options = {});

// The tensors are negotiated and fused as one unit (see chorus.h).
TorchHandle grouped_allreduce_async(const std::vector<::torch::Tensor>& tensors,
                                    const std::string& name, const AllreduceOptions& options = {});
TorchHandle grouped_allreduce_async_(const std::vector<::torch::Tensor>& tensors,
                                     const std::string& name,
                                     const AllreduceOptions& options = {});
std::vector<::torch::Tensor> grouped_allreduce(const std::vector<::torch::Tensor>& tensors,
                                               const std::string& name,
                                               const AllreduceOptions& options = {});
void grouped_allreduce_(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                        const AllreduceOptions& options = {});

// Every op below runs over `process_set` (the global set when omitted; see
// chorus/process_set.h): only its members call it, "rank" means set rank,
// and a broadcast's root_rank is a rank of the job that is a member.

// Concatenation of every rank's tensor along dimension 0 (sizes may differ).
TorchHandle allgather_async(const ::torch::Tensor& tensor, const std::string& name,
                            const ProcessSet& process_set = {});
::torch::Tensor allgather(const ::torch::Tensor& tensor, const std::string& name,
                          const ProcessSet& process_set = {});

// root_rank's tensor, in a new tensor or in place.
TorchHandle broadcast_async(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                            const ProcessSet& process_set = {});
TorchHandle broadcast_async_(const ::torch::Tensor& tensor, int root_rank,
                             const std::string& name, const ProcessSet& process_set = {});
::torch::Tensor broadcast(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                          const ProcessSet& process_set = {});
void broadcast_(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                const ProcessSet& process_set = {});

// Sends splits[i] rows (dimension 0) to rank i; empty splits: equal parts.
// received_splits() on the handle tells how many rows came from each rank.
TorchHandle alltoall_async(const ::torch::Tensor& tensor, const std::string& name,
                           const std::vector<int64_t>& splits = {},
                           const ProcessSet& process_set = {});
// Returns {output, received_splits as an int64 tensor}.
std::pair<::torch::Tensor, ::torch::Tensor> alltoall(const ::torch::Tensor& tensor,
                                                     const std::string& name,
                                                     const std::vector<int64_t>& splits = {},
                                                     const ProcessSet& process_set = {});

// Reduction of every rank's tensor; this rank keeps its slice of dimension 0.
TorchHandle reducescatter_async(const ::torch::Tensor& tensor, const std::string& name,
                                ReduceOp op = ReduceOp::kSum, const ProcessSet& process_set = {});
::torch::Tensor reducescatter(const ::torch::Tensor& tensor, const std::string& name,
                              ReduceOp op = ReduceOp::kSum, const ProcessSet& process_set = {});
// With scale factors (see chorus.h, ReducescatterOptions).
TorchHandle reducescatter_async(const ::torch::Tensor& tensor, const std::string& name,
                                const ReducescatterOptions& options);
::torch::Tensor reducescatter(const ::torch::Tensor& tensor, const std::string& name,
                              const ReducescatterOptions& options);

// Grouped forms (see chorus.h): the tensors are negotiated as one unit (member
// i named name + "." + i; a mismatch in any member fails the whole group on
// every rank) and fused where they fit. The results are in member order.
TorchHandle grouped_allgather_async(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                    const ProcessSet& process_set = {});
std::vector<::torch::Tensor> grouped_allgather(const std::vector<::torch::Tensor>& tensors,
                                               const std::string& name, const ProcessSet& process_set = {});
TorchHandle grouped_reducescatter_async(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                        ReduceOp op = ReduceOp::kSum, const ProcessSet& process_set = {});
std::vector<::torch::Tensor> grouped_reducescatter(const std::vector<::torch::Tensor>& tensors,
                                                   const std::string& name, ReduceOp op = ReduceOp::kSum,
                                                   const ProcessSet& process_set = {});
TorchHandle grouped_reducescatter_async(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                        const ReducescatterOptions& options);
std::vector<::torch::Tensor> grouped_reducescatter(const std::vector<::torch::Tensor>& tensors,
                                                   const std::string& name, const ReducescatterOptions& options);

// chorus::join(): this rank has no more data; the others' allreduces go on
// with its zeros (averages still divide by every rank), and their other
// collectives fail naming it, until every rank has joined. Returns the last
// rank to join.
int join();
// Waits until every member of `process_set` has called it.
void barrier(const ProcessSet& process_set = {});
// chorus::start_timeline() and stop_timeline(): collective; rank 0 writes
// the CHORUS_TIMELINE trace of what runs in between to `path`.
void start_timeline(const std::string& path, bool mark_cycles = false);
void stop_timeline();

}  // namespace torch
}  // namespace chorus
