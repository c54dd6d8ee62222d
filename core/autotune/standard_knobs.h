// The knobs the runtime tunes (runtime.cc lists them with how it applies
// each), described here so their grids and which variables fix them are
// tested without a runtime:
//   fusion_threshold_bytes  1 MiB .. 128 MiB in half-octave steps (log scale);
//                           fixed by CHORUS_FUSION_THRESHOLD
//   cycle_time_ms           0 .. 10 ms in 0.5 ms steps; fixed by
//                           CHORUS_CYCLE_TIME_MS
//   algorithm               one of the allreduce algorithms host memory's
//                           backend can switch between
//                           (Backend::allreduce_algorithms: "shm" or "mpi" on
//                           one host), the one in use first; fixed when it has
//                           one, or when the user chose the path
//                           (CHORUS_SHM_ALLREDUCE, CHORUS_SHM_ALLREDUCE_THRESHOLD
//                           or CHORUS_HIERARCHICAL_ALLREDUCE set)
// A value the user set explicitly is never tuned: they asked for it. The
// value in effect at init() is always a candidate (TuningKnob::numeric).
#pragma once

#include <string>
#include <vector>

#include "autotune/autotune_knob.h"
#include "base/config.h"

namespace chorus {

TuningKnob fusion_threshold_knob(const Config& config);
TuningKnob cycle_time_knob(const Config& config);
// `algorithms`: Backend::allreduce_algorithms(), the one in use first; the
// same list on every rank, so a label's index names the same algorithm
// everywhere.
TuningKnob algorithm_knob(const Config& config, std::vector<std::string> algorithms);

}  // namespace chorus
