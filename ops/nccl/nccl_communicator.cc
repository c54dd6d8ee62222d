#include "ops/nccl/nccl_communicator.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

#include "ops/cuda/cuda_device.h"
#include "ops/nccl/nccl_types.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;

std::string last_error_of(ncclComm_t comm) {
  const char* text = ncclGetLastError(comm);
  return text == nullptr ? std::string() : std::string(text);
}

bool call_failed(ncclResult_t result) { return result != ncclSuccess && result != ncclInProgress; }

}  // namespace

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  const long long ms = static_cast<long long>(duration.count());
  if (ms % 1000 == 0) {
    std::snprintf(text, sizeof(text), "%lld s", ms / 1000);
  } else {
    std::snprintf(text, sizeof(text), "%g s", static_cast<double>(ms) / 1000.0);
  }
  return text;
}

ScopedCudaDevice::ScopedCudaDevice(int index) {
  int current = -1;
  status_ = cuda_status("cudaGetDevice", cudaGetDevice(&current));
  if (!status_.ok() || current == index) return;
  status_ = cuda_status("cudaSetDevice", cudaSetDevice(index));
  if (status_.ok()) previous_ = current;
}

ScopedCudaDevice::~ScopedCudaDevice() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

Status NcclCommunicator::create(const ncclUniqueId& id, int rank, int size, int device,
                                std::chrono::milliseconds join_timeout, std::chrono::milliseconds close_timeout,
                                std::shared_ptr<NcclCommunicator>* out) {
  ScopedCudaDevice on_device(device);
  CHORUS_RETURN_IF_ERROR(on_device.status());
  const std::string what = "ncclCommInitRankConfig (rank " + std::to_string(rank) + " of " + std::to_string(size) +
                           ", CUDA device " + std::to_string(device) + ")";
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclUniqueId unique_id = id;
  ncclComm_t comm = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, size, unique_id, rank, &config);
  if (call_failed(started) || comm == nullptr) {
    const std::string last_error = comm == nullptr ? std::string() : last_error_of(comm);
    if (comm != nullptr) (void)ncclCommAbort(comm);
    return nccl_status(what, started == ncclSuccess ? ncclInternalError : started, last_error.c_str());
  }
  std::shared_ptr<NcclCommunicator> communicator(new NcclCommunicator(comm, rank, size, device, close_timeout));
  const Status joined = communicator->settle(what, join_timeout);
  if (joined.code() == StatusCode::kTimeout) {
    communicator->fail(Status::Timeout("joining the NCCL communicator of " + std::to_string(size) +
                                       " ranks did not finish within " + seconds_text(join_timeout) +
                                       ": a peer rank did not join; the NCCL communicator was aborted"));
  } else if (!joined.ok()) {
    communicator->fail(joined);  // a half-made communicator is of no use, whatever the error
  }
  if (communicator->failed()) return communicator->failure();
  *out = std::move(communicator);
  return Status::OK();
}

NcclCommunicator::~NcclCommunicator() { close(close_timeout_); }

Status NcclCommunicator::failure() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_;
}

Status NcclCommunicator::settle(const std::string& what, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::microseconds backoff{0};
  while (true) {
    if (failed()) return failure();
    ncclResult_t state = ncclSuccess;
    std::string last_error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (comm_ == nullptr) return failure();
      const ncclResult_t asked = ncclCommGetAsyncError(comm_, &state);
      if (asked != ncclSuccess) state = asked;
      if (call_failed(state)) last_error = last_error_of(comm_);
    }
    if (state == ncclSuccess) return Status::OK();
    if (state != ncclInProgress) return fail_with(what, state, last_error, /*fatal=*/true);
    if (Clock::now() >= deadline) {
      return Status::Timeout(what + " did not finish within " + seconds_text(timeout));
    }
    sleep_and_back_off(&backoff);
  }
}

Status NcclCommunicator::fail_with(const std::string& what, ncclResult_t result, const std::string& last_error,
                                   bool fatal) {
  const Status error = nccl_status(what, result, last_error.c_str());
  if (!fatal && error.code() == StatusCode::kInvalidArgument) return error;
  fail(Status(error.code(), error.message() + "; the NCCL communicator was aborted"));
  return failure();
}

Status NcclCommunicator::launch(const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& calls,
                                std::chrono::milliseconds timeout) {
  if (failed()) return failure();
  ncclResult_t result = ncclSuccess;
  std::string last_error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_ == nullptr) return failure();
    result = calls(comm_);
    if (call_failed(result)) last_error = last_error_of(comm_);
  }
  if (call_failed(result)) return fail_with(what, result, last_error, /*fatal=*/false);
  if (result == ncclSuccess) return Status::OK();
  const Status settled = settle(what, timeout);
  if (settled.code() != StatusCode::kTimeout) return settled;
  fail(Status::Timeout(what + " could not be enqueued within " + seconds_text(timeout) +
                       ": a peer rank did not take part; the NCCL communicator was aborted"));
  return failure();
}

Status NcclCommunicator::call(const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& calls) {
  if (failed()) return failure();
  ncclResult_t result = ncclSuccess;
  std::string last_error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_ == nullptr) return failure();
    result = calls(comm_);
    if (call_failed(result)) last_error = last_error_of(comm_);
  }
  if (call_failed(result)) return fail_with(what, result, last_error, /*fatal=*/false);
  return Status::OK();
}

Status NcclCommunicator::poll() {
  if (failed()) return failure();
  ncclResult_t state = ncclSuccess;
  std::string last_error;
  {
    // Never waits: the mutex may be held by a launch (briefly) or by an
    // abort (until NCCL's kernels are off the stream), which has recorded
    // its failure first.
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return failure();
    if (comm_ == nullptr) return failure();
    const ncclResult_t asked = ncclCommGetAsyncError(comm_, &state);
    if (asked != ncclSuccess) state = asked;
    if (call_failed(state)) last_error = last_error_of(comm_);
  }
  // ncclInProgress: another thread's launch is being enqueued; not an error.
  if (!call_failed(state)) return Status::OK();
  return fail_with("NCCL (an asynchronous error of the communicator)", state, last_error, /*fatal=*/true);
}

void NcclCommunicator::fail(const Status& failure) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    failure_ = failure.ok() ? Status::Aborted("the NCCL communicator was aborted") : failure;
    failed_.store(true, std::memory_order_release);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_ == nullptr) return;
  ScopedCudaDevice on_device(device_);
  // Stops NCCL's kernels and proxy threads and frees the communicator; the
  // stream's later work runs on.
  (void)ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::abort(const std::string& reason) {
  fail(Status::Aborted("the NCCL communicator was aborted: " + reason));
}

void NcclCommunicator::close(std::chrono::milliseconds timeout) {
  ncclResult_t result = ncclSuccess;
  std::string last_error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_ == nullptr) return;
    ScopedCudaDevice on_device(device_);
    result = ncclCommFinalize(comm_);
    if (call_failed(result)) last_error = last_error_of(comm_);
  }
  Status finalized = Status::OK();
  if (call_failed(result)) {
    finalized = nccl_status("ncclCommFinalize", result, last_error.c_str());
  } else if (result == ncclInProgress) {
    finalized = settle("ncclCommFinalize", timeout);
  }
  if (!finalized.ok()) {
    // A peer gone, or an earlier error: ncclCommAbort ends it locally.
    fail(Status(finalized.code(), finalized.message() + "; the NCCL communicator was aborted"));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failed_.load(std::memory_order_relaxed)) {
      failure_ = Status::Shutdown("the NCCL communicator is closed");
      failed_.store(true, std::memory_order_release);
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (comm_ == nullptr) return;
  ScopedCudaDevice on_device(device_);
  (void)ncclCommDestroy(comm_);
  comm_ = nullptr;
}

}  // namespace chorus
