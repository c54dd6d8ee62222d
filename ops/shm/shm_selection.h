// Which allreduces of host memory run over shared memory (ShmAllreduce)
// rather than MPI, keyed by message size, dtype and op. Every rank holds
// rank 0's settings, so all ranks pick the same path for a collective.
#pragma once

#include <cstdint>
#include <vector>

#include "chorus/types.h"
#include "base/config.h"

namespace chorus {

struct ShmAllreduceSelection {
  AutoOnOff mode = AutoOnOff::kOff;
  int64_t threshold_bytes = 0;
  int ranks = 1;
  // Set by the start-up probe (shm_probe.h): from each `from_bytes` on, up
  // to the next range, whether auto takes shared memory; sorted, the first
  // from 0. Empty: threshold_bytes decides.
  struct Range {
    int64_t from_bytes;
    bool shm;
  };
  std::vector<Range> measured;

  // kOff: never. kOn: always. kAuto: the measured ranges, else messages of
  // threshold_bytes and more,
  // and float16/bfloat16 sums and products on 3+ ranks of any size. The
  // rule dates from when the MPI path rounded 16-bit floats after every
  // rank; both paths now fold with the same kernel and agree bit for bit
  // for every dtype and op, so it no longer matters for the results. It
  // stays for speed: small float16 averages at np=3 are faster over shared
  // memory than on MPI's ordered path (docs/MEASUREMENTS.md, "16-bit
  // averages: shared memory against MPI").
  bool use_shm(int64_t bytes, DataType dtype, ReduceOp op) const;
};

}  // namespace chorus
