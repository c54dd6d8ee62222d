// ShmBackend: host-memory collectives for a job whose ranks share one host.
// Allreduces that ShmAllreduceSelection picks run over shared memory
// (ShmAllreduce); every other collective, and the allreduces it does not
// pick, go to the MPI backend it wraps.
#pragma once

#include <memory>
#include <vector>

#include "ops/backend.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"
#include "ops/shm/shm_selection.h"

namespace chorus {

class ShmBackend : public Backend {
 public:
  ShmBackend(std::unique_ptr<Backend> fallback, std::unique_ptr<ShmGroup> group, int64_t chunk_bytes,
             const ShmAllreduceSelection& selection);

  const char* name() const override { return "shm"; }
  bool supports(const Device& device) const override { return fallback_->supports(device); }

  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) override;
  Status allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                    DataType dtype) override {
    return fallback_->allgatherv(input, output, counts, dtype);
  }
  Status broadcast(void* buffer, int64_t bytes, int root) override {
    return fallback_->broadcast(buffer, bytes, root);
  }
  Status exchange_counts(const std::vector<int64_t>& send_counts,
                         std::vector<int64_t>* recv_counts) override {
    return fallback_->exchange_counts(send_counts, recv_counts);
  }
  Status alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                   const std::vector<int64_t>& recv_counts, DataType dtype) override {
    return fallback_->alltoallv(input, send_counts, output, recv_counts, dtype);
  }
  Status reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                       DataType dtype, ReduceOp op) override {
    return fallback_->reducescatter(input, output, recv_counts, dtype, op);
  }
  Status barrier() override { return fallback_->barrier(); }

  const ShmAllreduceSelection& selection() const { return selection_; }
  // The autotuner's algorithm choice: the auto-mode threshold from which
  // allreduces take shared memory (INT64_MAX: MPI only, except the
  // float16/bfloat16 cases selection_ always sends to shared memory). Called
  // on the background thread between cycles, identically on every rank.
  void set_selection_threshold(int64_t bytes) { selection_.threshold_bytes = bytes; }

 private:
  std::unique_ptr<Backend> fallback_;
  std::unique_ptr<ShmGroup> group_;
  ShmAllreduce shm_;
  ShmAllreduceSelection selection_;
};

}  // namespace chorus
