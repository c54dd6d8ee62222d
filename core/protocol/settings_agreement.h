// How the ranks agree on their settings.
//
// Every CHORUS_* setting is read by each rank from its own environment, and
// some of them decide what every rank does in a collective (how tensors are
// fused, how the negotiation's bit vector is laid out, which path an
// allreduce takes). Those must be alike on every rank, or the ranks would
// run different collectives and hang or corrupt memory. Each row of the
// settings table (core/base/settings.def) names its rule (Agreement):
//
//   alike         init() fails on every rank unless every rank holds rank
//                 0's value: the rank that differs is told its value and
//                 rank 0's, the others which ranks differ.
//   rank 0's      read by rank 0 alone, which runs the clock, the stall
//                 inspector, the timeline and the autotuner's search.
//   this rank's   each rank's own (its log level, its heartbeat addresses,
//                 its GPU; which ranks then share a GPU is learnt at init
//                 and decided alike on every rank: ops/gpu/gpu_plan.h).
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
#include "base/settings.h"
#include "protocol/controller_transport.h"

namespace chorus {

// A setting every rank must hold alike, as a number.
struct AlikeSetting {
  const char* variable;  // CHORUS_...
  int64_t value;
  const Setting* row;  // spells a value as the variable takes it, for messages
};

// The alike settings of `config`, in the order of the settings table.
std::vector<AlikeSetting> alike_settings(const Config& config);

// Collective over `transport`. OK when every rank's `local` (whether it could
// read its environment) is OK and every rank's alike settings equal rank 0's;
// else the same failure on every rank, naming the ranks (and, on a rank that
// differs, its value and rank 0's).
Status agree_on_settings(ControllerTransport* transport, const Status& local, const Config& config);

}  // namespace chorus
