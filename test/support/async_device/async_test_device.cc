#include "support/async_device/async_test_device.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/kernels/convert.h"
#include "ops/kernels/scale.h"

namespace chorus_test {

using chorus::Status;

// Done once the worker has finished the work queued before it was recorded.
class AsyncTestDevice::StreamEvent : public chorus::Event {
 public:
  StreamEvent(const AsyncTestDevice* device, uint64_t after) : device_(device), after_(after) {}
  bool done() const override { return device_->finished() >= after_; }
  void synchronize() const override {
    std::unique_lock<std::mutex> lock(device_->mutex_);
    device_->done_cv_.wait(lock, [&] { return device_->finished_ >= after_; });
  }

 private:
  const AsyncTestDevice* device_;
  const uint64_t after_;
};

AsyncTestDevice::AsyncTestDevice(chorus::Device device, std::chrono::microseconds delay)
    : device_(device), delay_(delay), worker_([this] { run(); }) {}

AsyncTestDevice::~AsyncTestDevice() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void AsyncTestDevice::run() {
  while (true) {
    std::function<Status()> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything has run
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    std::this_thread::sleep_for(delay_);
    const Status status = work();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!status.ok() && failure_.ok()) failure_ = status;
      ++finished_;
    }
    done_cv_.notify_all();
  }
}

void AsyncTestDevice::enqueue(std::function<Status()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    ++queued_;
  }
  work_cv_.notify_one();
}

Status AsyncTestDevice::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

uint64_t AsyncTestDevice::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_;
}

uint64_t AsyncTestDevice::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

void AsyncTestDevice::synchronize() { record()->synchronize(); }

Status AsyncTestDevice::allocate(size_t bytes, std::shared_ptr<void>* out) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* memory = std::aligned_alloc(64, rounded > 0 ? rounded : 64);
  if (memory == nullptr) return Status::Internal("test device: out of memory for " + std::to_string(bytes) + " bytes");
  // Fresh device memory is garbage, not zeros: a reader that relies on it
  // being anything gets caught.
  std::memset(memory, 0xA5, rounded > 0 ? rounded : 64);
  out->reset(memory, std::free);
  return Status::OK();
}

Status AsyncTestDevice::copy(const std::vector<Copy>& copies) {
  for (const Copy& c : copies) {
    if (c.bytes > 0 && c.to == nullptr) return Status::InvalidArgument("test device: copy to null");
  }
  enqueue([copies] {
    for (const Copy& c : copies) {
      if (c.bytes == 0) continue;
      if (c.from == nullptr) {
        std::memset(c.to, 0, c.bytes);
      } else if (c.from != c.to) {
        std::memmove(c.to, c.from, c.bytes);
      }
    }
    return Status::OK();
  });
  return Status::OK();
}

// The kernels check their arguments before touching memory: run with no
// elements, they check what a call asks for now, as the interface promises.
Status AsyncTestDevice::scale(const void* in, void* out, int64_t count, chorus::DataType dtype, double factor) {
  CHORUS_RETURN_IF_ERROR(chorus::scale(in, out, 0, dtype, factor));
  if (count < 0) return Status::InvalidArgument("scale: negative count " + std::to_string(count));
  enqueue([=] { return chorus::scale(in, out, count, dtype, factor); });
  return Status::OK();
}

Status AsyncTestDevice::divide(void* buffer, int64_t count, chorus::DataType dtype, int64_t divisor) {
  CHORUS_RETURN_IF_ERROR(chorus::divide(buffer, 0, dtype, divisor));
  if (count < 0) return Status::InvalidArgument("divide: negative count " + std::to_string(count));
  enqueue([=] { return chorus::divide(buffer, count, dtype, divisor); });
  return Status::OK();
}

Status AsyncTestDevice::convert(const void* in, chorus::DataType from, void* out, chorus::DataType to,
                                int64_t count) {
  CHORUS_RETURN_IF_ERROR(chorus::convert(in, from, out, to, 0));
  if (count < 0) return Status::InvalidArgument("convert: negative count " + std::to_string(count));
  enqueue([=] { return chorus::convert(in, from, out, to, count); });
  return Status::OK();
}

Status AsyncTestDevice::wait(std::shared_ptr<const chorus::Event> event) {
  if (!event) return Status::OK();
  enqueue([event = std::move(event)] {
    event->synchronize();
    return Status::OK();
  });
  return Status::OK();
}

std::shared_ptr<const chorus::Event> AsyncTestDevice::record() {
  return std::make_shared<StreamEvent>(this, queued());
}

Status AsyncTestDevice::to_host(void* host, const void* from, size_t bytes) {
  if (bytes > 0 && from == nullptr) return Status::InvalidArgument("to_host: a null source for " + std::to_string(bytes) + " bytes");
  CHORUS_RETURN_IF_ERROR(copy({Copy{host, from, bytes}}));
  synchronize();
  return failure();
}

Status AsyncTestDevice::from_host(void* to, const void* host, size_t bytes) {
  if (bytes > 0 && host == nullptr) return Status::InvalidArgument("from_host: a null source for " + std::to_string(bytes) + " bytes");
  CHORUS_RETURN_IF_ERROR(copy({Copy{to, host, bytes}}));
  synchronize();
  return failure();
}

}  // namespace chorus_test
