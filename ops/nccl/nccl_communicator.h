// NcclCommunicator: one NCCL communicator, created non-blocking
// (ncclConfig_t::blocking = 0), and the rules for using it from several
// threads.
//
// Why non-blocking: a blocking communicator can hang inside an NCCL call
// (joining, or connecting to a peer that died) with no way out for the
// thread in it; NCCL documents that only a non-blocking communicator can be
// aborted at any point. Every call then returns at once, possibly with
// ncclInProgress, and the communicator's state (ncclCommGetAsyncError) turns
// ncclSuccess once the call's work is enqueued on the stream, or an error.
// launch() polls that state with short sleeps, so a caller sees a
// collective either enqueued or failed, never half-enqueued. The price, in
// NCCL 2.28: a non-blocking communicator of more than one rank launches
// every collective (every group) from a thread of its own and returns
// ncclInProgress, so each launch costs the background thread a thread start
// and at least one ~50 us sleep; fusion keeps collectives to a few per cycle.
// (On one rank NCCL enqueues a copy or a scaling kernel at once.)
//
// Threads: the background thread launches collectives, the completion
// thread polls for asynchronous errors, and abort() may come from any
// thread. One mutex serialises every NCCL call on the communicator (even
// ncclCommGetAsyncError changes it: it joins a finished launch's thread);
// it is held only for single calls, which return at once on a non-blocking
// communicator (ncclCommAbort excepted), never across a poll's sleep.
//
// Failure: the first failure (abort(), a timeout, or an NCCL error other
// than a bad argument) aborts the communicator (ncclCommAbort: NCCL's
// kernels on the stream stop) and is kept; from then on every call returns
// that Status.
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/back_off.h"
#include "chorus/status.h"

namespace chorus {

// "300 s", "0.25 s": a duration in the seconds that messages quote.
std::string seconds_text(std::chrono::milliseconds duration);

// Makes `index` the calling thread's current CUDA device for its lifetime,
// then restores the previous one (NCCL and the CUDA runtime take the device
// of streams, events and allocations from the calling thread).
class ScopedCudaDevice {
 public:
  explicit ScopedCudaDevice(int index);
  ~ScopedCudaDevice();
  ScopedCudaDevice(const ScopedCudaDevice&) = delete;
  ScopedCudaDevice& operator=(const ScopedCudaDevice&) = delete;
  // An error setting the device (the guard then restores nothing).
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

class NcclCommunicator {
 public:
  // Collective over `size` ranks: joins the communicator of `id` as `rank`
  // on CUDA device `device` (made current meanwhile). Waits for the
  // non-blocking join up to `join_timeout`; a join that has not finished by
  // then (a peer did not join) is aborted and fails with kTimeout.
  // `close_timeout` bounds the destructor's close().
  static Status create(const ncclUniqueId& id, int rank, int size, int device, std::chrono::milliseconds join_timeout,
                       std::chrono::milliseconds close_timeout, std::shared_ptr<NcclCommunicator>* out);
  ~NcclCommunicator();  // close()
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }

  // Runs `calls` (the NCCL calls of one collective, a group, or a
  // PreMulSum's creation) on the communicator, then waits until they are
  // enqueued: OK, or the failure that ended them (see above). A wait past
  // `timeout` aborts the communicator: enqueueing waits only for
  // connections to peers, so a peer that does not take part is the cause.
  Status launch(const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& calls,
                std::chrono::milliseconds timeout);
  // Like launch() for calls that create nothing to wait for: their result
  // as a Status (ncclRedOpDestroy).
  Status call(const std::string& what, const std::function<ncclResult_t(ncclComm_t)>& calls);

  // The state now, never waiting: OK (also while work is in flight, or
  // while another thread is in an NCCL call), or the failure. An
  // asynchronous NCCL error found here aborts the communicator first.
  // Called from any thread.
  Status poll();

  // Ends the communicator with `failure` (its first failure wins): NCCL's
  // outstanding work on the device stops and every later call returns the
  // first failure. Called from any thread. The failure is on record before
  // ncclCommAbort starts, which returns only once NCCL's kernels are off the
  // stream (the work queued before them on it runs first); other threads'
  // calls fail at once meanwhile.
  void fail(const Status& failure);
  // fail() with Aborted("the NCCL communicator was aborted: <reason>").
  void abort(const std::string& reason);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // The first failure; OK while there is none.
  Status failure() const;

  // The orderly end: flushes and releases the communicator
  // (ncclCommFinalize, then ncclCommDestroy), or aborts it when that does
  // not finish within `timeout` (a peer gone). Later calls fail. Idempotent.
  void close(std::chrono::milliseconds timeout);

 private:
  NcclCommunicator(ncclComm_t comm, int rank, int size, int device, std::chrono::milliseconds close_timeout)
      : comm_(comm), rank_(rank), size_(size), device_(device), close_timeout_(close_timeout) {}
  // Waits for the communicator's state to leave ncclInProgress: OK, the
  // failure, or kTimeout after `timeout` (the communicator is then not
  // failed yet: the caller words the failure).
  Status settle(const std::string& what, std::chrono::milliseconds timeout);
  // The failure an NCCL error `result` of `what` means, and fails the
  // communicator with it unless it was a bad argument (NCCL: the call had no
  // effect and the communicator is intact). Called without mutex_.
  // `fatal` false: a call's own return value, where bad arguments leave the
  // communicator intact; true: the communicator's state, always fatal.
  Status fail_with(const std::string& what, ncclResult_t result, const std::string& last_error, bool fatal);

  mutable std::mutex mutex_;  // every NCCL call on comm_
  ncclComm_t comm_;           // null once aborted or closed
  const int rank_;
  const int size_;
  const int device_;
  const std::chrono::milliseconds close_timeout_;
  std::atomic<bool> failed_{false};
  mutable std::mutex failure_mutex_;
  Status failure_;
};

}  // namespace chorus
