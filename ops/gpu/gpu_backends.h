// The GPU backends of a build with CUDA: at init(), every rank binds to its
// GPU, the ranks learn each other's (host, GPU UUID), and every rank registers
// the same kind of backend for its GPU's memory: NCCL, the host-staged one,
// or none (ops/gpu/gpu_plan.h has the rules; docs/DESIGN.md, "GPUs: binding,
// shared GPUs and the host-staged path").
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>

#include "base/config.h"
#include "base/topology.h"
#include "chorus/status.h"
#include "contracts/backend.h"
#include "contracts/backend_registry.h"
#include "ops/setup_channel.h"

namespace chorus {

// Makes a host backend over a communicator of its own, for a GPU backend's
// transport. Collective: every rank calls it, or none does.
using TransportMaker = std::function<Status(std::unique_ptr<Backend>* out)>;
// Makes a communicator of every rank of its own (kept until the job ends),
// from which the hierarchical backend splits its levels' communicators.
// Collective likewise.
using CommMaker = std::function<Status(MPI_Comm* out)>;

// Collective over `channel` (every rank of the job, in world-rank order).
// Adds this rank's GPU backend to `registry`, or none (also when the
// program's own backends, already in `registry`, serve every rank's GPU),
// and tells the registry why CUDA tensors it does not serve are refused. Fails on every
// rank alike: CHORUS_GPU_BACKEND asking for what cannot be had, a rank whose
// CHORUS_CUDA_DEVICE names a GPU it does not see, CUDA failing on any rank.
// Rank 0 logs the choice (at warning when ranks share a GPU or some have
// none). On a job spanning hosts whose GPUs run NCCL, the hierarchical
// backend goes in front of the flat NCCL one as CHORUS_HIERARCHICAL_ALLREDUCE
// says (ops/gpu/gpu_hierarchical.h), on a communicator from `new_comm`.
Status add_gpu_backends(const Config& agreed, const Topology& topology, SetupChannel& channel,
                        const TransportMaker& new_transport, const CommMaker& new_comm, BackendRegistry* registry);

}  // namespace chorus
