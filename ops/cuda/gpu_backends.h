// The GPU backends of a build with CUDA: at init(), every rank binds to its
// GPU, the ranks learn each other's (host, GPU UUID), and every rank registers
// the same kind of backend for its GPU's memory: NCCL, the host-staged one,
// or none (ops/gpu_plan.h has the rules; docs/DESIGN.md, "GPUs: binding,
// shared GPUs and the host-staged path").
#pragma once

#include <functional>
#include <memory>

#include "base/config.h"
#include "base/topology.h"
#include "chorus/status.h"
#include "ops/backend.h"
#include "ops/backend_registry.h"
#include "ops/setup_channel.h"

namespace chorus {

// Makes a host backend over a communicator of its own, for a GPU backend's
// transport. Collective: every rank calls it, or none does.
using TransportMaker = std::function<Status(std::unique_ptr<Backend>* out)>;

// Collective over `channel` (every rank of the job, in world-rank order).
// Adds this rank's GPU backend to `registry`, or none, and tells the
// registry why CUDA tensors it does not serve are refused. Fails on every
// rank alike: CHORUS_GPU_BACKEND asking for what cannot be had, a rank whose
// CHORUS_CUDA_DEVICE names a GPU it does not see, CUDA failing on any rank.
// Rank 0 logs the choice (at warning when ranks share a GPU or some have
// none).
Status add_gpu_backends(const Config& agreed, const Topology& topology, SetupChannel& channel,
                        const TransportMaker& new_transport, BackendRegistry* registry);

}  // namespace chorus
