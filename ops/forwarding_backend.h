// ForwardingBackend: a host backend in front of another one (the MPI
// backend) that takes over some allreduces and passes every other
// collective through. The shared-memory and hierarchical backends are this:
// they choose, per allreduce, their own path or the wrapped backend's.
#pragma once

#include <memory>
#include <vector>

#include "ops/host_backend.h"

namespace chorus {

class ForwardingBackend : public HostBackend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> fallback) : fallback_(std::move(fallback)) {}

  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override {
    return fallback_->allreduce(input, output, count, dtype, op, factor);
  }
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override {
    return fallback_->fuses_in_place(count, dtype, op);
  }
  WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                           double factor) override {
    return fallback_->allreduce_pieces(pieces, dtype, op, factor);
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

 protected:
  Backend& fallback() { return *fallback_; }

 private:
  std::unique_ptr<Backend> fallback_;
};

}  // namespace chorus
