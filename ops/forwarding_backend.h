// Forwarding backends: a backend in front of another one (the fallback)
// that takes over some allreduces and passes every other collective
// through. They choose, per allreduce, their own path or the fallback's.
//   - ForwardingBackend, for host memory: the shared-memory and hierarchical
//     backends in front of MPI. The device is HostBackend's own HostDevice
//     (the calling thread), the same as the fallback's.
//   - DeviceForwardingBackend, for a device's memory: the hierarchical GPU
//     backend in front of the flat NCCL one. The device (its one stream),
//     which devices it serves and abort() are the fallback's too, so that
//     the executor's packing, the fallback's collectives and this backend's
//     own go on one stream in the order they are asked for.
// Both forward the collectives through Forwarding<Base>, so a collective
// added to Backend is forwarded in one place.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "contracts/backend.h"
#include "ops/host_backend.h"

namespace chorus {

template <typename Base>
class Forwarding : public Base {
 public:
  explicit Forwarding(std::unique_ptr<Backend> fallback) : fallback_(std::move(fallback)) {}

  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override {
    return fallback_->allreduce(input, output, count, dtype, op, factor);
  }
  Status check_reduction(DataType dtype) const override { return fallback_->check_reduction(dtype); }
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override {
    return fallback_->fuses_in_place(count, dtype, op);
  }
  WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                           double factor) override {
    return fallback_->allreduce_pieces(pieces, dtype, op, factor);
  }
  WorkPtr adasum(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor) override {
    return fallback_->adasum(buffer, counts, dtype, factor);
  }
  WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype) override {
    return fallback_->allgatherv(input, output, counts, dtype);
  }
  WorkPtr broadcast(void* buffer, int64_t bytes, int root) override { return fallback_->broadcast(buffer, bytes, root); }
  Status exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) override {
    return fallback_->exchange_counts(send_counts, recv_counts);
  }
  WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                    const std::vector<int64_t>& recv_counts, DataType dtype) override {
    return fallback_->alltoallv(input, send_counts, output, recv_counts, dtype);
  }
  WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts, DataType dtype,
                        ReduceOp op, double factor) override {
    return fallback_->reducescatter(input, output, recv_counts, dtype, op, factor);
  }
  WorkPtr barrier() override { return fallback_->barrier(); }
  void abort(const std::string& reason) override { fallback_->abort(reason); }

 protected:
  Backend& fallback() { return *fallback_; }
  const Backend& fallback() const { return *fallback_; }
  // Destroys the fallback now, for a destructor that must end it before
  // its own members (nothing may be called on this backend afterwards).
  void close_fallback() { fallback_.reset(); }

 private:
  std::unique_ptr<Backend> fallback_;
};

using ForwardingBackend = Forwarding<HostBackend>;

class DeviceForwardingBackend : public Forwarding<Backend> {
 public:
  using Forwarding<Backend>::Forwarding;

  bool supports(const Device& device) const override { return fallback().supports(device); }
  DeviceOps* device_ops(const Device& device) override { return fallback().device_ops(device); }
};

}  // namespace chorus
