// NcclBackend: the collectives on one GPU's memory, through NCCL, on the
// CudaDevice's stream. Everything the executor asks of the device (packing,
// scaling, unpacking) and of the backend goes on that one stream in order,
// so a collective starts after the packing before it without the host
// waiting, and returns NcclWork (nccl_work.h) that is done when an event
// recorded after it is.
//
// What each collective is (every rank must call them alike, as ever):
//  - allreduce: ncclAllReduce (in place when input == output). A sum with a
//    factor goes through ncclRedOpCreatePreMulSum where that is exact
//    (nccl_types.h: float32, float64, and 16-bit factors the dtype holds),
//    otherwise ncclAllReduce and then CudaDevice::scale (float32 math, one
//    rounding of the scaled value).
//  - allgatherv: ncclAllGather when every rank gives the same count,
//    otherwise one ncclBroadcast per rank into its slot, in one group.
//  - broadcast: ncclBroadcast of bytes, in place.
//  - alltoallv: ncclSend/ncclRecv per rank with a non-empty block, grouped.
//  - reducescatter: ncclReduceScatter when the counts are equal, otherwise
//    one ncclReduce per rank's block (that rank the root), grouped; the
//    factor as in allreduce.
//  - barrier: a one-element ncclAllReduce on a device scalar of its own.
//  - exchange_counts: over the host `transport` (an MPI backend with a
//    communicator of its own), finished when it returns.
//
// Failures (nccl_communicator.h): argument errors come back as
// InvalidArgument work before any NCCL call; an NCCL error, a collective
// that does not finish within NcclOptions::timeout, or abort() ends the
// communicator, and from then on every collective and all outstanding work
// fail with the first such reason.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "contracts/backend.h"
#include "contracts/backend_registry.h"
#include "ops/cuda/cuda_device.h"
#include "ops/nccl/nccl_communicator.h"
#include "ops/nccl/nccl_types.h"

namespace chorus {

struct NcclOptions {
  // How long a collective may take, from wait() until its work is done (or
  // from its launch until NCCL has enqueued it; and joining the
  // communicator), before the backend decides that a peer rank is not
  // taking part, aborts the communicator and fails. Collectives wait
  // behind the work queued on the stream before them (a producer's kernels
  // among it), so this is generous: 300 s by default.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // How long closing the communicator at the end (ncclCommFinalize) may take
  // before it is aborted instead: 30 s by default.
  std::chrono::milliseconds close_timeout{std::chrono::seconds(30)};
};

class NcclBackend : public Backend {
 public:
  // Over `comm`, already joined on `device`'s GPU (make_nccl_backend below
  // does both). Fails (every collective then returns the error) when the
  // device's scalar for barrier() cannot be allocated.
  // The device may be shared with other backends that queue their work on
  // its stream (the hierarchical GPU backend's parts).
  NcclBackend(std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
              std::shared_ptr<NcclCommunicator> comm, const NcclOptions& options);
  // Closes the communicator (NcclOptions::close_timeout), then frees the
  // device memory.
  ~NcclBackend() override;

  const char* name() const override { return "nccl"; }
  bool supports(const Device& device) const override;
  DeviceOps* device_ops(const Device& device) override;
  // int16 and uint16 are refused: NCCL has no type to reduce them with.
  Status check_reduction(DataType dtype) const override { return nccl_reducible(dtype); }
  CudaDevice* cuda_device() { return device_.get(); }
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  // The constructor's outcome.
  const Status& init_status() const { return init_status_; }

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
  // Ends the communicator (ncclCommAbort): outstanding work and every later
  // collective fail with "the NCCL communicator was aborted: <reason>", at
  // once, on every thread. From any thread; it returns when NCCL's kernels
  // are off the stream (the stream's work queued before them runs first).
  void abort(const std::string& reason) override;

 private:
  // One collective: `enqueue` (on the calling thread, with the device
  // current) makes its NCCL calls through comm_->launch() and any stream
  // work after them; then an event is recorded behind it all.
  WorkPtr run(const char* collective, const std::function<Status()>& enqueue);
  // The NCCL calls of `what`, enqueued (NcclCommunicator::launch).
  Status launch(const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& calls);
  // A sum, min, max or product of `count` elements into `output` (whose
  // rank `root` receives it, or all ranks when root < 0), scaled by
  // `factor`: through PreMulSum where nccl_types.h says so, else a scale of
  // `output` afterwards (on every rank that holds a result).
  Status reduce_and_scale(const char* collective, DataType dtype, ReduceOp op, double factor,
                          const std::function<ncclResult_t(ncclComm_t, ncclRedOp_t)>& reduce, void* output,
                          int64_t result_count);
  // Copies `count` elements from `from` to `to` on the stream; the ranges
  // may overlap (then through the scratch buffer).
  Status move_within(void* to, const void* from, size_t count, size_t element_size);
  // At least `bytes` of device memory of the backend's own; grows after
  // the stream's queued work is done.
  Status scratch(size_t bytes, void** out);

  NcclOptions options_;
  std::shared_ptr<CudaDevice> device_;
  std::unique_ptr<Backend> transport_;
  std::shared_ptr<void> barrier_scalar_;  // one int32 on the device
  std::shared_ptr<void> scratch_;
  size_t scratch_bytes_ = 0;
  Status init_status_;
  // Declared last: it closes before the device memory above is freed (a
  // cudaFree would otherwise wait for a hung NCCL kernel).
  std::shared_ptr<NcclCommunicator> comm_;
};

// Collective over every rank of the job (MPI_COMM_WORLD's ranks, which
// `transport` also spans): rank 0 makes the unique id, `transport` (an MPI
// backend over a communicator of its own, host memory) broadcasts it, and
// every rank joins the communicator on `device`'s GPU. Ranks agree on the
// outcome through `transport`: if any rank cannot join, every rank fails,
// with a message naming those ranks. A job of one rank works (a
// communicator of one). NCCL refuses two ranks on one GPU ("Duplicate GPU").
Status make_nccl_backend(std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
                         const NcclOptions& options, std::unique_ptr<Backend>* out);
// The same over the ranks of `group` (a host's ranks, say), in its order:
// `transport` spans exactly those ranks, and messages name ranks of `group`.
Status make_nccl_backend(MPI_Comm group, std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
                         const NcclOptions& options, std::unique_ptr<Backend>* out);

// A BackendMaker (core/contracts/backend_registry.h) for the NCCL backend on GPU
// `device_index`: makes the CudaDevice, then make_nccl_backend. A rank whose
// GPU cannot be set up still takes part in the set-up's agreement, so every
// rank fails, naming it, instead of waiting for it. For MpiCommunication::start
// and for tests that run the runtime over NCCL (detail::init_with_backends).
BackendMaker nccl_backend_maker(int device_index, const NcclOptions& options = {});

}  // namespace chorus
