// AsyncTestDevice: a device for the tests that behaves like a GPU without
// one. Its memory is host memory of its own (allocated here, never a
// caller's), its stream a worker thread that runs the queued copies and
// kernels later, in order, each after a delay, and its events are real:
// done only once the worker has run everything recorded before them.
//
// So an executor that hands out a result before the device's work on it has
// finished, or that starts a collective before its input's producer is done,
// reads stale memory here, and the tests that check the data see it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "contracts/device.h"

namespace chorus_test {

class AsyncTestDevice : public chorus::DeviceOps {
 public:
  // `delay`: how long the worker waits before each piece of work.
  explicit AsyncTestDevice(chorus::Device device = chorus::Device::custom(0),
                           std::chrono::microseconds delay = std::chrono::microseconds(500));
  ~AsyncTestDevice() override;
  AsyncTestDevice(const AsyncTestDevice&) = delete;
  AsyncTestDevice& operator=(const AsyncTestDevice&) = delete;

  chorus::Device device() const override { return device_; }
  chorus::Status allocate(size_t bytes, std::shared_ptr<void>* out) override;
  chorus::Status copy(const std::vector<Copy>& copies) override;
  chorus::Status scale(const void* in, void* out, int64_t count, chorus::DataType dtype, double factor) override;
  chorus::Status divide(void* buffer, int64_t count, chorus::DataType dtype, int64_t divisor) override;
  chorus::Status convert(const void* in, chorus::DataType from, void* out, chorus::DataType to,
                         int64_t count) override;
  chorus::Status wait(std::shared_ptr<const chorus::Event> event) override;
  std::shared_ptr<const chorus::Event> record() override;
  chorus::Status to_host(void* host, const void* from, size_t bytes) override;
  chorus::Status from_host(void* to, const void* host, size_t bytes) override;

  // Queues `work` on the stream (what a backend's collective does). Its
  // error, like a kernel's, is the stream's first error (failure()).
  void enqueue(std::function<chorus::Status()> work);
  // The first error of any work run so far; OK when none.
  chorus::Status failure() const;
  // How many pieces of work have been queued and run so far.
  uint64_t queued() const;
  uint64_t finished() const;
  // Blocks until everything queued so far has run.
  void synchronize();

 private:
  class StreamEvent;
  void run();

  const chorus::Device device_;
  const std::chrono::microseconds delay_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  mutable std::condition_variable done_cv_;
  std::deque<std::function<chorus::Status()>> queue_;
  uint64_t queued_ = 0;
  uint64_t finished_ = 0;
  chorus::Status failure_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace chorus_test
