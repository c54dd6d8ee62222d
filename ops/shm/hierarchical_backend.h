// HierarchicalBackend: host-memory collectives for a job on several hosts
// with the same number of ranks on each. Allreduces that
// HierarchicalSelection (ops/hierarchical_selection.h) picks run as
// HierarchicalAllreduce (shared memory within each host, MPI across hosts);
// every other collective, and the allreduces it does not pick, go to the MPI
// backend it wraps.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/config.h"
#include "ops/forwarding_backend.h"
#include "ops/hierarchical_selection.h"
#include "ops/shm/hierarchical_allreduce.h"
#include "base/topology.h"

namespace chorus {

class HierarchicalBackend : public ForwardingBackend {
 public:
  HierarchicalBackend(std::unique_ptr<Backend> fallback, std::unique_ptr<HierarchicalAllreduce> hierarchical,
                      const HierarchicalSelection& selection);

  const char* name() const override { return "hierarchical"; }
  // The hierarchical path scales after it reduced, which rounds a
  // float16/bfloat16 result once more: its cross-host step sends 16-bit
  // shares, so the host's float32 sum cannot wait for the factor. The other
  // allreduces go to the wrapped backend, which scales as it reduces.
  WorkPtr allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                    double factor) override;

 private:
  std::unique_ptr<HierarchicalAllreduce> hierarchical_;
  HierarchicalSelection selection_;
};

// For a job on several hosts (collective over `comm`, every rank of the
// job, with rank 0's `selection` on every rank): HierarchicalBackend in
// front of `mpi`, or `mpi` alone when the mode is off, or (auto) when hosts
// hold different numbers of ranks or one rank each, or shared memory cannot
// be set up (rank 0 logs why). Mode on: those cases are errors, the same on
// every rank, except one rank per host, which on runs hierarchically too.
Status make_hierarchical_backend(const HierarchicalSelection& selection, const Topology& topology, MPI_Comm comm,
                                 std::unique_ptr<Backend> mpi, std::unique_ptr<Backend>* out);

}  // namespace chorus
