// How CudaDevice::copy turns a batch of copies into batched-copy kernel
// launches. Host code without CUDA, so it is unit-tested on any machine.
//
// A launch copies all its pieces at once (each piece cut into blocks of
// `bytes_per_block`, one thread block each), so two pieces of one launch
// must not depend on each other. DeviceOps promises that the copies of a
// batch run in order: a piece that reads or writes what an earlier piece of
// the current launch writes, or writes what it reads, starts the next launch,
// which the stream runs after this one. Packing and unpacking a fusion
// buffer have no such pieces, so they take one launch (or one per
// `pieces_per_launch`, the descriptors that fit in a kernel's parameters).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "contracts/device.h"

namespace chorus {

// `bytes` from `from` to `to`, zeros when `from` is null. Blocks
// [first_block, first_block + ceil(bytes / bytes_per_block)) of the launch
// copy it, block k of the piece the bytes from k * bytes_per_block on.
struct CopyPiece {
  char* to;
  const char* from;
  uint64_t bytes;
  uint32_t first_block;
};

struct CopyLaunch {
  std::vector<CopyPiece> pieces;
  uint32_t blocks = 0;  // the grid: the blocks of every piece
};

struct CopyLimits {
  size_t pieces_per_launch;
  uint64_t bytes_per_block;
};

// The launches, in stream order, that do `copies` as DeviceOps::copy
// promises: empty pieces and pieces whose source is their destination are
// dropped (nothing to do). Invalid argument for a null destination, or a
// piece whose source and destination overlap without being equal (a parallel
// copy would read bytes it has already overwritten); then `launches` is
// empty and nothing must run.
Status plan_copies(const std::vector<DeviceOps::Copy>& copies, const CopyLimits& limits,
                   std::vector<CopyLaunch>* launches);

}  // namespace chorus
