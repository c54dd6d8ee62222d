// The hierarchical allreduce of GPU memory (ops/device_hierarchical_backend.h)
// built from the GPU's pieces: NCCL over the ranks of each host for the
// reduce-scatter and the allgather, the host-staged backend
// (ops/gpu/staged_backend.h: device to pinned host memory, MPI in a host
// function on the stream, back to the device) over the ranks with the same
// local rank for the cross-host step, and the flat NCCL backend over every
// rank for the rest, all on one CudaDevice's stream. Built with NCCL only.
#pragma once

#include <mpi.h>

#include <memory>

#include "base/topology.h"
#include "chorus/status.h"
#include "contracts/backend.h"
#include "ops/cuda/cuda_device.h"
#include "ops/hierarchical_selection.h"
#include "ops/nccl/nccl_backend.h"

namespace chorus {

// Collective over `comm` (every rank of the job, a communicator of its own
// that outlives nothing made here: the levels split their own from it).
// `flat`: the NCCL backend over every rank on `device`. *out: the
// hierarchical backend in front of `flat` where `selection.mode`
// (CHORUS_HIERARCHICAL_ALLREDUCE) and the job's hosts (topology.node,
// nodes, local_rank) allow it, else `flat` itself (make_device_hierarchical_backend
// has the rules and the errors).
Status make_gpu_hierarchical_backend(const HierarchicalSelection& selection, const Topology& topology, MPI_Comm comm,
                                     std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> flat,
                                     const NcclOptions& options, std::unique_ptr<Backend>* out);

}  // namespace chorus
