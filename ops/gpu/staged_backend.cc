#include "ops/gpu/staged_backend.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <utility>

#include "base/back_off.h"
#include "ops/cuda/cuda_event.h"

namespace chorus {

// Whether the backend was aborted, and why: read by the host functions (on
// CUDA's thread), the work (on the runtime's threads) and the backend.
class StagedAbort {
 public:
  void set(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reason_.empty()) reason_ = reason.empty() ? "(no reason given)" : reason;
  }
  // OK until aborted.
  Status status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reason_.empty()) return Status::OK();
    return Status::Aborted("the staged GPU backend was aborted: " + reason_);
  }

 private:
  mutable std::mutex mutex_;
  std::string reason_;
};

namespace {

// Staging buffers start at this size, so that a job of small collectives
// allocates once.
constexpr size_t kMinStagingBytes = size_t{1} << 20;

// A collective queued on the stream: done once the event recorded after its
// copy back to the device is; its outcome is the host function's, unless the
// stream itself failed. Not waited for in cudaEventSynchronize, which an
// abort could not end: it polls the event, sleeping in between.
class StagedWork : public Work {
 public:
  StagedWork(std::shared_ptr<const CudaEvent> done, std::shared_ptr<const Status> outcome,
             std::shared_ptr<const StagedAbort> abort)
      : done_(std::move(done)), outcome_(std::move(outcome)), abort_(std::move(abort)) {}
  bool test() override { return cudaEventQuery(done_->get()) != cudaErrorNotReady || !abort_->status().ok(); }
  Status wait() override {
    for (std::chrono::microseconds backoff{0};; sleep_and_back_off(&backoff)) {
      const cudaError_t queried = cudaEventQuery(done_->get());
      if (queried == cudaSuccess) return *outcome_;  // written by the host function before the event
      if (queried != cudaErrorNotReady) return cuda_status("the stream of a staged collective", queried);
      CHORUS_RETURN_IF_ERROR(abort_->status());
    }
  }

 private:
  std::shared_ptr<const CudaEvent> done_;
  std::shared_ptr<const Status> outcome_;
  std::shared_ptr<const StagedAbort> abort_;
};

// What a host function runs, and where it leaves the outcome. Owned by the
// host function, which deletes it.
struct HostCall {
  std::function<Status()> run;
  std::shared_ptr<Status> outcome;
  std::shared_ptr<const StagedAbort> abort;
};

// Runs on CUDA's host-function thread: it must not call CUDA. After an
// abort it skips the collective: its peers may be gone.
void CUDART_CB run_host_call(void* data) {
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(data));
  const Status aborted = call->abort->status();
  *call->outcome = aborted.ok() ? call->run() : aborted;
}

size_t bytes_of(int64_t count, DataType dtype) { return static_cast<size_t>(count) * dtype_size(dtype); }

// Sum of `counts`; InvalidArgument naming the collective for a negative one.
Status total_of(const char* collective, const std::vector<int64_t>& counts, int64_t* total) {
  *total = 0;
  for (int64_t count : counts) {
    if (count < 0) {
      return Status::InvalidArgument(std::string(collective) + " got a negative count (" + std::to_string(count) +
                                     ")");
    }
    *total += count;
  }
  return Status::OK();
}

Status check_rank_counts(const char* collective, const std::vector<int64_t>& counts, int rank) {
  if (rank < static_cast<int>(counts.size())) return Status::OK();
  return Status::InvalidArgument(std::string(collective) + " got " + std::to_string(counts.size()) +
                                 " counts; expected one per rank (this is rank " + std::to_string(rank) + ")");
}

}  // namespace

StagedBackend::StagedBackend(std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport, int rank)
    : device_(std::move(device)),
      transport_(std::move(transport)),
      rank_(rank),
      abort_(std::make_shared<StagedAbort>()) {}

StagedBackend::~StagedBackend() {
  if (!abort_->status().ok() && use_device().ok() && cudaStreamQuery(device_->stream()) == cudaErrorNotReady) {
    // A host function may be inside MPI waiting for ranks that are gone:
    // it would never be waited for, and it still uses the transport and the
    // staging buffers, so they stay to the process's end (MPI_Abort follows).
    (void)transport_.release();
    return;
  }
  // Nothing the stream still has queued may outlive its buffers; an error
  // here has already failed the work that saw it.
  (void)drain();
  for (Staging* buffer : {&input_, &output_}) {
    if (buffer->data != nullptr) cudaFreeHost(buffer->data);
  }
}

void StagedBackend::abort(const std::string& reason) { abort_->set(reason); }

Status StagedBackend::use_device() const {
  return cuda_status("cudaSetDevice", cudaSetDevice(device_->index()));
}

Status StagedBackend::drain() {
  CHORUS_RETURN_IF_ERROR(use_device());
  std::shared_ptr<const CudaEvent> queued;
  CHORUS_RETURN_IF_ERROR(CudaEvent::record(device_->stream(), &queued));
  // Work whose outcome is the stream's alone: polled like a collective's, so
  // that an abort ends the wait.
  return StagedWork(std::move(queued), std::make_shared<const Status>(), abort_).wait();
}

Status StagedBackend::reserve(Staging* buffer, size_t bytes) {
  if (bytes <= buffer->bytes) return Status::OK();
  const size_t grown = std::max({bytes, 2 * buffer->bytes, kMinStagingBytes});
  // Queued collectives may still copy into or out of the old buffer.
  CHORUS_RETURN_IF_ERROR(drain());
  if (buffer->data != nullptr) {
    CHORUS_RETURN_IF_ERROR(cuda_status("cudaFreeHost", cudaFreeHost(buffer->data)));
    buffer->data = nullptr;
    buffer->bytes = 0;
  }
  void* data = nullptr;
  // Portable: pinned for every CUDA context, whichever device is current.
  const cudaError_t error = cudaHostAlloc(&data, grown, cudaHostAllocPortable);
  if (error != cudaSuccess) {
    return cuda_status(("cudaHostAlloc of a " + std::to_string(grown) + "-byte staging buffer").c_str(), error);
  }
  buffer->data = data;
  buffer->bytes = grown;
  return Status::OK();
}

WorkPtr StagedBackend::stage(const char* collective, const Transfer& down, std::function<Status()> on_host,
                             const Transfer& up) {
  const cudaStream_t stream = device_->stream();
  Status status = abort_->status();
  if (status.ok()) status = use_device();
  if (status.ok() && down.bytes > 0) {
    status = cuda_status("cudaMemcpyAsync (device to host staging)",
                         cudaMemcpyAsync(down.to, down.from, down.bytes, cudaMemcpyDeviceToHost, stream));
  }
  if (!status.ok()) return finished_work(status);
  // Read only after the event below is done; a stream that fails before the
  // host function runs fails that event too.
  auto outcome = std::make_shared<Status>(
      Status::Internal(std::string("the staged ") + collective + " did not run on the GPU's stream"));
  auto* call = new HostCall{std::move(on_host), outcome, abort_};
  const cudaError_t launched = cudaLaunchHostFunc(stream, &run_host_call, call);
  if (launched != cudaSuccess) {
    delete call;
    return finished_work(cuda_status("cudaLaunchHostFunc", launched));
  }
  if (up.bytes > 0) {
    status = cuda_status("cudaMemcpyAsync (host staging to device)",
                         cudaMemcpyAsync(up.to, up.from, up.bytes, cudaMemcpyHostToDevice, stream));
    if (!status.ok()) return finished_work(status);
  }
  std::shared_ptr<const CudaEvent> done;
  status = CudaEvent::record(stream, &done);
  if (!status.ok()) return finished_work(status);
  return std::make_unique<StagedWork>(std::move(done), std::move(outcome), abort_);
}

WorkPtr StagedBackend::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                 double factor) {
  if (count < 0) return finished_work(Status::InvalidArgument("allreduce got a negative count"));
  const size_t bytes = bytes_of(count, dtype);
  Status status = reserve(&input_, bytes);
  if (!status.ok()) return finished_work(status);
  // Reduced in place on the host: one staging buffer, whether the device's
  // input and output are one buffer or two.
  void* host = input_.data;
  Backend* transport = transport_.get();
  return stage(
      "allreduce", {host, input, bytes},
      [=] { return transport->allreduce(host, host, count, dtype, op, factor)->wait(); }, {output, host, bytes});
}

WorkPtr StagedBackend::allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                                  DataType dtype) {
  int64_t total = 0;
  Status status = check_rank_counts("allgatherv", counts, rank_);
  if (status.ok()) status = total_of("allgatherv", counts, &total);
  const size_t in_bytes = status.ok() ? bytes_of(counts[static_cast<size_t>(rank_)], dtype) : 0;
  if (status.ok()) status = reserve(&input_, in_bytes);
  if (status.ok()) status = reserve(&output_, bytes_of(total, dtype));
  if (!status.ok()) return finished_work(status);
  void* host_in = input_.data;
  void* host_out = output_.data;
  Backend* transport = transport_.get();
  return stage(
      "allgatherv", {host_in, input, in_bytes},
      [=] { return transport->allgatherv(host_in, host_out, counts, dtype)->wait(); },
      {output, host_out, bytes_of(total, dtype)});
}

WorkPtr StagedBackend::broadcast(void* buffer, int64_t bytes, int root) {
  if (bytes < 0) return finished_work(Status::InvalidArgument("broadcast got a negative byte count"));
  const auto size = static_cast<size_t>(bytes);
  const Status status = reserve(&input_, size);
  if (!status.ok()) return finished_work(status);
  void* host = input_.data;
  Backend* transport = transport_.get();
  // Only the root's data goes down, and the root's buffer already holds the
  // result.
  const bool is_root = root == rank_;
  return stage(
      "broadcast", {host, buffer, is_root ? size : 0},
      [=] { return transport->broadcast(host, bytes, root)->wait(); }, {buffer, host, is_root ? 0 : size});
}

Status StagedBackend::exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) {
  // The transport's calls must stay in the stream's order (they share its
  // communicator with the queued collectives), so this goes on the stream
  // too, and is waited for: the executor sizes an output with it.
  Backend* transport = transport_.get();
  return stage(
             "exchange of counts", {}, [=] { return transport->exchange_counts(send_counts, recv_counts); }, {})
      ->wait();
}

WorkPtr StagedBackend::alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                                 const std::vector<int64_t>& recv_counts, DataType dtype) {
  int64_t sent = 0, received = 0;
  Status status = total_of("alltoallv", send_counts, &sent);
  if (status.ok()) status = total_of("alltoallv", recv_counts, &received);
  if (status.ok()) status = reserve(&input_, bytes_of(sent, dtype));
  if (status.ok()) status = reserve(&output_, bytes_of(received, dtype));
  if (!status.ok()) return finished_work(status);
  void* host_in = input_.data;
  void* host_out = output_.data;
  Backend* transport = transport_.get();
  return stage(
      "alltoallv", {host_in, input, bytes_of(sent, dtype)},
      [=] { return transport->alltoallv(host_in, send_counts, host_out, recv_counts, dtype)->wait(); },
      {output, host_out, bytes_of(received, dtype)});
}

WorkPtr StagedBackend::reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                     DataType dtype, ReduceOp op, double factor) {
  int64_t total = 0;
  Status status = check_rank_counts("reducescatter", recv_counts, rank_);
  if (status.ok()) status = total_of("reducescatter", recv_counts, &total);
  const size_t out_bytes = status.ok() ? bytes_of(recv_counts[static_cast<size_t>(rank_)], dtype) : 0;
  if (status.ok()) status = reserve(&input_, bytes_of(total, dtype));
  if (status.ok()) status = reserve(&output_, out_bytes);
  if (!status.ok()) return finished_work(status);
  void* host_in = input_.data;
  void* host_out = output_.data;
  Backend* transport = transport_.get();
  return stage(
      "reducescatter", {host_in, input, bytes_of(total, dtype)},
      [=] { return transport->reducescatter(host_in, host_out, recv_counts, dtype, op, factor)->wait(); },
      {output, host_out, out_bytes});
}

WorkPtr StagedBackend::barrier() {
  Backend* transport = transport_.get();
  return stage("barrier", {}, [=] { return transport->barrier()->wait(); }, {});
}

}  // namespace chorus
