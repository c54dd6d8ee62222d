// Where the hierarchical allreduce (within each host, then across hosts,
// then within each host again) applies, for host memory
// (ops/shm/hierarchical_backend.h) and GPU memory
// (ops/device_hierarchical_backend.h) alike, set by
// CHORUS_HIERARCHICAL_ALLREDUCE. Two decisions, both pure functions of what
// every rank knows alike (rank 0's settings, the job's shape), so every rank
// takes the same path for every collective:
//   - at init, whether the job's hosts allow the hierarchical path at all
//     (plan_hierarchy);
//   - per allreduce, whether that message takes it (HierarchicalSelection).
#pragma once

#include <cstdint>
#include <string>

#include "base/config.h"
#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// Which allreduces take the hierarchical path, given that the job's hosts
// allow it.
struct HierarchicalSelection {
  AutoOnOff mode = AutoOnOff::kOff;
  int64_t threshold_bytes = 0;  // CHORUS_SHM_ALLREDUCE_THRESHOLD
  int ranks = 1;                // in the whole job

  // kOff: never. kOn: always. kAuto: messages of threshold_bytes and more,
  // and floating-point sums and products on 3+ ranks of any size: the two
  // paths fold those in different orders (hosts first, or world ranks), so
  // a tensor must take the same path alone (small) and fused (large) to get
  // the same bits. Integers, min and max come out the same on both paths.
  bool use_hierarchical(int64_t bytes, DataType dtype, ReduceOp op) const;
  // use_hierarchical() for an allreduce of `count` elements; false for
  // arguments no backend accepts (bool, kAverage, a negative count, a dtype
  // out of range), which go to the flat backend, whose checks name them.
  bool takes(int64_t count, DataType dtype, ReduceOp op) const;
};

// The job's hosts, as every rank learns them at init.
struct HostShape {
  int hosts = 1;
  int fewest_ranks = 1;  // on any host
  int most_ranks = 1;
};

// What plan_hierarchy decided.
struct HierarchyPlan {
  bool hierarchical = false;
  // Why not, for rank 0's log: "hosts hold between 1 and 3 ranks; flat MPI".
  std::string reason;
};

// Whether a job of `shape` runs the hierarchical path under `mode`; `flat`
// names what runs instead, for messages ("MPI", "NCCL"):
//   - off, or a job on one host: no;
//   - hosts holding different numbers of ranks: auto, no; on, an error
//     (InvalidArgument naming the host sizes): local rank r's shares would
//     have different bounds on different hosts;
//   - one rank per host: auto, no (nothing to do within a host); on, yes;
//   - otherwise yes.
Status plan_hierarchy(AutoOnOff mode, const HostShape& shape, const std::string& flat, HierarchyPlan* out);

}  // namespace chorus
