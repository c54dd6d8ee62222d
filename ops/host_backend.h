// HostBackend: host memory's Backend. Its collectives are HostCollectives
// (MPI, with shared memory or the hierarchical path in front), which have
// finished when they return, and its device operations are the host's
// kernels (HostDevice), run by the calling thread.
#pragma once

#include <memory>

#include "ops/backend.h"
#include "ops/kernels/host_device.h"

namespace chorus {

class HostBackend : public Backend {
 public:
  explicit HostBackend(std::unique_ptr<HostCollectives> collectives) : collectives_(std::move(collectives)) {}

  const char* name() const override { return collectives_->name(); }
  bool supports(const Device& device) const override { return collectives_->supports(device); }
  DeviceOps* device_ops(const Device&) override { return &device_; }
  HostCollectives& collectives() { return *collectives_; }

  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override;
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override;
  WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                           double factor) override;
  WorkPtr allgatherv(const void* input, void* output, const std::vector<int64_t>& counts, DataType dtype) override;
  WorkPtr broadcast(void* buffer, int64_t bytes, int root) override;
  Status exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) override;
  WorkPtr alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                    const std::vector<int64_t>& recv_counts, DataType dtype) override;
  WorkPtr reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts, DataType dtype,
                        ReduceOp op, double factor) override;
  WorkPtr barrier() override;
  std::vector<std::string> allreduce_algorithms() const override { return collectives_->allreduce_algorithms(); }
  Status use_allreduce_algorithm(const std::string& algorithm) override {
    return collectives_->use_allreduce_algorithm(algorithm);
  }

 private:
  std::unique_ptr<HostCollectives> collectives_;
  HostDevice device_;
};

}  // namespace chorus
