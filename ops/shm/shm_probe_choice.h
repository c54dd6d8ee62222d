// What the start-up probe (shm_probe.h) decides from its timings, as a pure
// function of them, and how a decision is written to and read back from the
// probe's cache file (shm_probe_cache.h).
//
// The rule: streaming stores when, summed over the probed sizes of 1 MiB
// and up (the only ones with slots rewritten within a message), they beat
// plain stores by 5% or more (streaming gained 10-15% where it helped); then, per probed size, the faster of the shared-memory path
// (with that store mode) and the MPI path. Each probed size speaks for the
// sizes from the geometric mean with the probed size below it up to the one
// with the size above; the smallest for everything down to its half, the
// largest for everything above. Below the smallest probed size's half: MPI
// (single small messages, where the negotiation dominates either way).
//
// Before that, the engine's one-stage limit (shm_allreduce.h): the small
// probed sizes were also timed through the one-stage path; it takes the
// smallest of them on if it beat the chunked path there by 10% or more, and
// each further size while it keeps doing so, each speaking up to the geometric mean with
// the next size timed both ways (the last one up to itself). A size below
// that limit is then judged against MPI by its one-stage time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/shm/shm_selection.h"

namespace chorus {

// One probed size: the slowest rank's best time of each path, microseconds.
struct ShmProbeSample {
  int64_t bytes = 0;
  double mpi_us = 0.0;
  double shm_plain_us = 0.0;
  double shm_streaming_us = 0.0;
  double shm_one_stage_us = 0.0;  // 0: not timed (above the sizes the one-stage path may take)
};

struct ShmProbeChoice {
  std::vector<ShmProbeSample> samples;  // by size, ascending
  bool streaming_stores = false;
  int64_t one_stage_bytes = 0;  // the engine's one-stage limit; 0: none
  std::vector<ShmAllreduceSelection::Range> ranges;  // merged, the first from 0

  // A sample's shared-memory time in this choice's store mode: through the
  // chunked path, and through the path its size takes (one stage up to
  // one_stage_bytes).
  double chunked_us(const ShmProbeSample& s) const { return streaming_stores ? s.shm_streaming_us : s.shm_plain_us; }
  double shm_us(const ShmProbeSample& s) const {
    return s.bytes <= one_stage_bytes ? s.shm_one_stage_us : chunked_us(s);
  }

  // One line for the log and chorusrun --probe: the store mode, the
  // one-stage limit, the ranges and, per size, the ratio of MPI's time to
  // shared memory's.
  std::string describe() const;
  // Text for the cache file; parse() reads it back (false when malformed).
  std::string serialize() const;
  static bool parse(const std::string& text, ShmProbeChoice* out);
};

// The rule above; `samples` must be sorted by size and non-empty.
ShmProbeChoice choose_allreduce_paths(const std::vector<ShmProbeSample>& samples);

}  // namespace chorus
