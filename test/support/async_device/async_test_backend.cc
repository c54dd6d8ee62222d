#include "support/async_device/async_test_backend.h"

namespace chorus_test {
namespace {

using chorus::Status;

// A collective queued on the stream: done once the stream ran it.
class StreamWork : public chorus::Work {
 public:
  StreamWork(std::shared_ptr<const chorus::Event> ran, std::shared_ptr<Status> outcome)
      : ran_(std::move(ran)), outcome_(std::move(outcome)) {}
  bool test() override { return ran_->done(); }
  Status wait() override {
    ran_->synchronize();
    return *outcome_;  // written by the stream before `ran_` was done
  }

 private:
  std::shared_ptr<const chorus::Event> ran_;
  std::shared_ptr<Status> outcome_;
};

}  // namespace

chorus::WorkPtr AsyncTestBackend::on_stream(std::function<Status()> collective) {
  auto outcome = std::make_shared<Status>();
  device_->enqueue([this, collective = std::move(collective), outcome] {
    const std::string aborted = aborted_reason();
    *outcome = aborted.empty() ? collective() : Status::Aborted("the async-test backend was aborted: " + aborted);
    return *outcome;
  });
  return std::make_unique<StreamWork>(device_->record(), std::move(outcome));
}

chorus::WorkPtr AsyncTestBackend::allreduce(const void* input, void* output, int64_t count, chorus::DataType dtype,
                                            chorus::ReduceOp op, double factor) {
  return on_stream([=] { return transport_->allreduce(input, output, count, dtype, op, factor)->wait(); });
}

chorus::WorkPtr AsyncTestBackend::allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                                             chorus::DataType dtype) {
  return on_stream([=] { return transport_->allgatherv(input, output, counts, dtype)->wait(); });
}

chorus::WorkPtr AsyncTestBackend::broadcast(void* buffer, int64_t bytes, int root) {
  return on_stream([=] { return transport_->broadcast(buffer, bytes, root)->wait(); });
}

Status AsyncTestBackend::exchange_counts(const std::vector<int64_t>& send_counts,
                                         std::vector<int64_t>* recv_counts) {
  // Metadata the executor needs now: queued behind the collectives before it
  // (they share the communicator), then waited for.
  return on_stream([=] { return transport_->exchange_counts(send_counts, recv_counts); })->wait();
}

chorus::WorkPtr AsyncTestBackend::alltoallv(const void* input, const std::vector<int64_t>& send_counts,
                                            void* output, const std::vector<int64_t>& recv_counts,
                                            chorus::DataType dtype) {
  return on_stream([=] { return transport_->alltoallv(input, send_counts, output, recv_counts, dtype)->wait(); });
}

chorus::WorkPtr AsyncTestBackend::reducescatter(const void* input, void* output,
                                                const std::vector<int64_t>& recv_counts, chorus::DataType dtype,
                                                chorus::ReduceOp op, double factor) {
  return on_stream(
      [=] { return transport_->reducescatter(input, output, recv_counts, dtype, op, factor)->wait(); });
}

chorus::WorkPtr AsyncTestBackend::barrier() {
  return on_stream([this] { return transport_->barrier()->wait(); });
}

void AsyncTestBackend::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (aborted_.empty()) aborted_ = reason.empty() ? "(no reason given)" : reason;
}

std::string AsyncTestBackend::aborted_reason() const {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  return aborted_;
}

chorus::BackendMaker async_test_backend(std::chrono::microseconds delay, AsyncTestDevice** device,
                                        AsyncTestBackend** made) {
  return [delay, device, made](std::unique_ptr<chorus::Backend> transport,
                               std::unique_ptr<chorus::Backend>* out) {
    auto backend = std::make_unique<AsyncTestBackend>(
        std::move(transport), std::make_unique<AsyncTestDevice>(chorus::Device::custom(0), delay));
    if (device != nullptr) *device = &backend->device();
    if (made != nullptr) *made = backend.get();
    *out = std::move(backend);
    return Status::OK();
  };
}

}  // namespace chorus_test
