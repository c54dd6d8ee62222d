// ShmBackend: host-memory collectives for a job whose ranks share one host.
// Allreduces that ShmAllreduceSelection picks run over shared memory
// (ShmAllreduce); every other collective, and the allreduces it does not
// pick, go to the MPI backend it wraps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/forwarding_backend.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"
#include "ops/shm/shm_selection.h"

namespace chorus {

class ShmBackend : public ForwardingBackend {
 public:
  ShmBackend(std::unique_ptr<Backend> fallback, std::unique_ptr<ShmGroup> group, const ShmAllreduceOptions& options,
             const ShmAllreduceSelection& selection);

  const char* name() const override { return "shm"; }
  // Each rank scales its own share as it reduces it (ShmAllreduce's share
  // step), so the whole result is scaled once, spread over the ranks.
  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override;

  // Fused messages the shared-memory path takes are gathered from and
  // scattered to the tensors directly (see ShmAllreduce).
  bool fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const override { return takes(count, dtype, op); }
  WorkPtr allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                           double factor) override;
  const ShmAllreduceSelection& selection() const { return selection_; }
  // "shm": shared memory for the allreduces the selection picks (the
  // configured threshold); "mpi": MPI for all of them, except the
  // float16/bfloat16 cases the selection always sends to shared memory.
  std::vector<std::string> allreduce_algorithms() const override { return {"shm", "mpi"}; }
  Status use_allreduce_algorithm(const std::string& algorithm) override;

  // The start-up probe's handles: the engine, the MPI path, and where its
  // choice goes (every rank alike, before the first collective).
  ShmAllreduce& engine() { return shm_; }
  Backend& mpi() { return fallback(); }
  void choose(const ShmAllreduceSelection& selection) { selection_ = configured_ = selection; }

 private:
  bool takes(int64_t count, DataType dtype, ReduceOp op) const;

  std::unique_ptr<ShmGroup> group_;
  ShmAllreduce shm_;
  ShmAllreduceSelection selection_;
  ShmAllreduceSelection configured_;  // "shm"'s
};

}  // namespace chorus
