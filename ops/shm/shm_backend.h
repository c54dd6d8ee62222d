// ShmBackend: host-memory collectives for a job whose ranks share one host.
// Allreduces that ShmAllreduceSelection picks run over shared memory
// (ShmAllreduce); every other collective, and the allreduces it does not
// pick, go to the MPI backend it wraps.
#pragma once

#include <memory>
#include <vector>

#include "ops/forwarding_backend.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"
#include "ops/shm/shm_selection.h"

namespace chorus {

class ShmBackend : public ForwardingBackend {
 public:
  ShmBackend(std::unique_ptr<HostCollectives> fallback, std::unique_ptr<ShmGroup> group, int64_t chunk_bytes,
             const ShmAllreduceSelection& selection);

  const char* name() const override { return "shm"; }
  Status allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) override;
  // Each rank scales its own share as it reduces it (ShmAllreduce's share
  // step), so the whole result is scaled once, spread over the ranks.
  Status allreduce_scaled(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                          double factor) override;

  // Fused messages the shared-memory path takes are gathered from and
  // scattered to the tensors directly (see ShmAllreduce).
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override { return takes(count, dtype, op); }
  Status allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                          double factor) override;
  const ShmAllreduceSelection& selection() const { return selection_; }
  // The autotuner's algorithm choice: the auto-mode threshold from which
  // allreduces take shared memory (INT64_MAX: MPI only, except the
  // float16/bfloat16 cases selection_ always sends to shared memory). Called
  // on the background thread between cycles, identically on every rank.
  void set_selection_threshold(int64_t bytes) { selection_.threshold_bytes = bytes; }

 private:
  bool takes(int64_t count, DataType dtype, ReduceOp op) const;

  std::unique_ptr<ShmGroup> group_;
  ShmAllreduce shm_;
  ShmAllreduceSelection selection_;
};

}  // namespace chorus
