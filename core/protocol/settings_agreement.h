// How the ranks agree on their settings: one table, one rule per setting.
//
// Every CHORUS_* setting is read by each rank from its own environment, and
// some of them decide what every rank does in a collective (how tensors are
// fused, how the negotiation's bit vector is laid out, which path an
// allreduce takes). Those must be alike on every rank, or the ranks would
// run different collectives and hang or corrupt memory. The rules:
//
//   alike         init() fails on every rank unless every rank holds rank
//                 0's value: the rank that differs is told its value and
//                 rank 0's, the others which ranks differ.
//                 CHORUS_AUTOTUNE, CHORUS_FUSION_THRESHOLD,
//                 CHORUS_CACHE_CAPACITY, CHORUS_SHM_ALLREDUCE,
//                 CHORUS_SHM_ALLREDUCE_THRESHOLD, CHORUS_SHM_PROBE,
//                 CHORUS_HIERARCHICAL_ALLREDUCE,
//                 CHORUS_GPU_BACKEND, CHORUS_HEARTBEAT_TIMEOUT_SECONDS
//   rank 0's      read by rank 0 alone, which runs the clock and the stall
//                 inspector: CHORUS_CYCLE_TIME_MS, CHORUS_STALL_*,
//                 CHORUS_TIMELINE, CHORUS_AUTOTUNE_* (the search).
//   this rank's   CHORUS_LOG_LEVEL; CHORUS_HEARTBEAT_INTERFACE (this host's
//                 addresses); CHORUS_CUDA_DEVICE (the GPU this rank
//                 binds to; which ranks then share a GPU is learnt at init
//                 and decided alike on every rank: ops/gpu_plan.h).
//   tuned         what the autotuner changes while the job runs (fusion
//                 threshold, cycle time, allreduce algorithm) is rank 0's
//                 choice, which every rank applies in the same negotiation
//                 cycle (the controller's coordinator words).
//
// The agreement runs once, at init(), before anything that depends on these
// settings is built, and also settles whether every rank could read its
// environment at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "base/config.h"
#include "protocol/controller_transport.h"

namespace chorus {

// A setting every rank must hold alike, as a number.
struct AlikeSetting {
  const char* variable;  // CHORUS_...
  int64_t value;
  // The value as the variable spells it, for messages (a number by default).
  std::string (*spell)(int64_t value) = nullptr;
};

// The alike settings of `config`, in a fixed order.
std::vector<AlikeSetting> alike_settings(const Config& config);

// Collective over `transport`. OK when every rank's `local` (whether it could
// read its environment) is OK and every rank's alike settings equal rank 0's;
// else the same failure on every rank, naming the ranks (and, on a rank that
// differs, its value and rank 0's).
Status agree_on_settings(ControllerTransport* transport, const Status& local, const Config& config);

}  // namespace chorus
