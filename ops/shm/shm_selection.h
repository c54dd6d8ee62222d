// Which allreduces of host memory run over shared memory (ShmAllreduce)
// rather than MPI, keyed by message size, dtype and op. Every rank holds
// rank 0's settings, so all ranks pick the same path for a collective.
#pragma once

#include <cstdint>

#include "chorus/types.h"
#include "base/config.h"

namespace chorus {

struct ShmAllreduceSelection {
  ShmAllreduceMode mode = ShmAllreduceMode::kOff;
  int64_t threshold_bytes = 0;
  int ranks = 1;

  // kOff: never. kOn: always. kAuto: messages of threshold_bytes and more,
  // and float16/bfloat16 sums and products on 3+ ranks of any size. The
  // rule dates from when the MPI path rounded 16-bit floats after every
  // rank; both paths now fold with the same kernel and agree bit for bit
  // for every dtype and op, so it no longer matters for the results. It
  // stays for speed: blocking float16 averages alone at np=3 on the 2-core
  // VM took ~28 us (4 KiB) and ~62 us (32 KiB) over shared memory against
  // ~35-38 and ~71-80 us on MPI's ordered path (2 runs each).
  bool use_shm(int64_t bytes, DataType dtype, ReduceOp op) const;
};

}  // namespace chorus
