// Which GPU this rank binds to, and what it reports about it to the other
// ranks (ops/gpu/gpu_plan.h): the CUDA calls behind the plan, no collective.
#pragma once

#include <string>

#include "base/config.h"
#include "base/topology.h"
#include "ops/gpu/gpu_plan.h"

namespace chorus {

// This rank's report: kNone when CUDA sees no GPU (cudaGetDeviceCount fails
// or finds none), with why; kBound with the GPU chosen by bind_cuda_device()
// and its UUID, *binding filled; kFailed when CHORUS_CUDA_DEVICE names a GPU
// it does not see or CUDA fails on the chosen one.
RankGpu probe_rank_gpu(const Config& config, const Topology& topology, GpuBinding* binding);

// nvidia-smi's spelling of a GPU's UUID: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
std::string gpu_uuid_text(const unsigned char bytes[16]);

}  // namespace chorus
