// AsyncTestBackend: the collectives of AsyncTestDevice memory. Each is queued
// on the device's stream and runs there later, in order, as an MPI
// collective on a communicator of its own (the device's memory is host
// memory); its work is done once the stream has run it. Every rank queues
// the same collectives in the same order, so they match across ranks as a
// GPU's would.
//
// Several backends may share one device (one stream), as the parts of the
// hierarchical device backend do: each queues on it in turn.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "contracts/backend.h"
#include "contracts/backend_registry.h"
#include "support/async_device/async_test_device.h"

namespace chorus_test {

class AsyncTestBackend : public chorus::Backend {
 public:
  AsyncTestBackend(std::unique_ptr<chorus::Backend> transport, std::shared_ptr<AsyncTestDevice> device)
      : transport_(std::move(transport)), device_(std::move(device)) {}
  // Waits for the stream to run what it has queued (its collectives use the
  // transport): a device shared with other backends outlives this one.
  ~AsyncTestBackend() override { device_->synchronize(); }
  AsyncTestBackend(const AsyncTestBackend&) = delete;
  AsyncTestBackend& operator=(const AsyncTestBackend&) = delete;

  const char* name() const override { return "async-test"; }
  bool supports(const chorus::Device& device) const override { return device == device_->device(); }
  chorus::DeviceOps* device_ops(const chorus::Device&) override { return device_.get(); }
  AsyncTestDevice& device() { return *device_; }

  chorus::WorkPtr allreduce(const void* input, void* output, int64_t count, chorus::DataType dtype,
                            chorus::ReduceOp op, double factor) override;
  chorus::WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                             chorus::DataType dtype) override;
  chorus::WorkPtr broadcast(void* buffer, int64_t bytes, int root) override;
  chorus::Status exchange_counts(const std::vector<int64_t>& send_counts,
                                 std::vector<int64_t>* recv_counts) override;
  chorus::WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                            const std::vector<int64_t>& recv_counts, chorus::DataType dtype) override;
  chorus::WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                chorus::DataType dtype, chorus::ReduceOp op, double factor) override;
  chorus::WorkPtr barrier() override;
  // Like a GPU backend's abort: collectives queued but not yet run, and any
  // asked for later, fail with `reason` instead of running. (A collective
  // already running on the stream finishes: the test device cannot cut
  // short an MPI call, as NCCL's abort does a kernel.)
  void abort(const std::string& reason) override;
  // The reason of the first abort(); empty while none.
  std::string aborted_reason() const;

 private:
  // Queues `collective` on the stream; work that is done once it has run.
  chorus::WorkPtr on_stream(std::function<chorus::Status()> collective);

  std::unique_ptr<chorus::Backend> transport_;
  std::shared_ptr<AsyncTestDevice> device_;
  mutable std::mutex abort_mutex_;
  std::string aborted_;
};

// A maker for chorus::detail::init_with_backends(): the backend of a new
// AsyncTestDevice (Device::custom(0)) whose stream waits `delay` before each
// piece of work; *device and *backend (when given) point at them while the
// runtime runs.
chorus::BackendMaker async_test_backend(std::chrono::microseconds delay, AsyncTestDevice** device = nullptr,
                                        AsyncTestBackend** backend = nullptr);

}  // namespace chorus_test
