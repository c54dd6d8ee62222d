// StagedBackend: the collectives of one GPU's memory, run through host
// memory by a host backend (MPI). It serves jobs that cannot use NCCL: two
// ranks bound to one GPU (NCCL refuses them), a build without NCCL, or
// CHORUS_GPU_BACKEND=staged (ops/gpu/gpu_plan.h decides).
//
// Each collective is queued on the device's stream, behind the executor's
// packing and before its unpacking, and the background thread never waits
// for it (only exchange_counts, which must finish before it returns, and the
// rare growth of a staging buffer wait for the stream):
//   1. cudaMemcpyAsync device -> pinned host staging buffer;
//   2. cudaLaunchHostFunc: the host backend's collective on the staging
//      buffers (MPI on pinned host memory; MPI runs with
//      MPI_THREAD_MULTIPLE, and a host function may call no CUDA API, which
//      MPI built without CUDA support does not);
//   3. cudaMemcpyAsync pinned host -> device;
// and the work returned is an event recorded after step 3 plus the
// collective's Status, which the host function writes before the stream
// moves past it. Every rank queues the same collectives in the same order,
// so the host functions' MPI calls match across ranks. A reduction's factor
// is applied on the host, by the host backend, as it reduces.
//
// Staging buffers: one pinned input and one pinned output buffer serve every
// collective. The stream runs in order: collective k's host-to-device copy
// has finished before collective k+1's device-to-host copy starts, so k+1
// may overwrite what k used. A buffer that must grow is replaced only after
// the stream has finished all queued work (the background thread waits
// then); it grows at least twofold, so that happens a few times per job.
//
// While its host function waits for the other ranks, the stream (and CUDA's
// thread that runs host functions) waits too: work queued behind it on this
// stream starts after the collective, as with NCCL.
//
// abort() (the runtime stops the job): host functions that have not started
// skip their collective, later collectives fail at once, and work waited for
// returns the abort's error instead of waiting for the stream; a host
// function already inside MPI cannot be cut short (the job's end, MPI_Abort,
// ends it), so an aborted backend whose stream is still busy leaves its
// staging buffers and transport to the process's end instead of waiting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "contracts/backend.h"
#include "ops/cuda/cuda_device.h"

namespace chorus {

class StagedAbort;

class StagedBackend : public Backend {
 public:
  // `transport`: a host backend over a communicator of its own, driven only
  // by this backend's host functions; `rank`: this rank in its group. The
  // device may be shared with other backends that queue their work on its
  // stream (the hierarchical GPU backend's parts).
  StagedBackend(std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport, int rank);
  // Waits for the stream to finish the queued collectives before freeing
  // their staging buffers (unless aborted with the stream still busy).
  ~StagedBackend() override;
  StagedBackend(const StagedBackend&) = delete;
  StagedBackend& operator=(const StagedBackend&) = delete;

  const char* name() const override { return "staged"; }
  bool supports(const Device& device) const override { return device == device_->device(); }
  DeviceOps* device_ops(const Device&) override { return device_.get(); }

  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override;
  WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype) override;
  WorkPtr broadcast(void* buffer, int64_t bytes, int root) override;
  Status exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) override;
  WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                    const std::vector<int64_t>& recv_counts, DataType dtype) override;
  WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts, DataType dtype,
                        ReduceOp op, double factor) override;
  WorkPtr barrier() override;
  // Fails queued and later collectives with "the staged GPU backend was
  // aborted: <reason>". From any thread.
  void abort(const std::string& reason) override;

 private:
  // Pinned host memory (cudaHostAlloc).
  struct Staging {
    void* data = nullptr;
    size_t bytes = 0;
  };
  // One contiguous copy between the device and a staging buffer; none when
  // `bytes` is 0.
  struct Transfer {
    void* to = nullptr;
    const void* from = nullptr;
    size_t bytes = 0;
  };

  // Queues `down` (device to host), `on_host` as a host function and `up`
  // (host to device) on the stream; work done once `up` is.
  WorkPtr stage(const char* collective, const Transfer& down, std::function<Status()> on_host, const Transfer& up);
  // Makes `buffer` hold at least `bytes`, waiting for the stream first when
  // it must be replaced.
  Status reserve(Staging* buffer, size_t bytes);
  // Blocks (yielding the CPU) until the stream has run everything queued.
  Status drain();
  // The stream's device is the calling thread's current one.
  Status use_device() const;

  std::shared_ptr<CudaDevice> device_;
  std::unique_ptr<Backend> transport_;
  int rank_;
  // Shared with the queued host functions and the work handed out, which
  // may outlive an aborted backend's wait.
  std::shared_ptr<StagedAbort> abort_;
  Staging input_;
  Staging output_;
};

}  // namespace chorus
