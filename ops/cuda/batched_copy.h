// The batched-copy kernel: one launch copies (or zero-fills) every piece of
// a CopyLaunch (copy_plan.h), whatever their sizes and alignments.
//
// The pieces travel in the kernel's parameters (up to 32 KiB since CUDA
// 12.1, on Volta and later), which the driver copies when the launch is
// queued: there is no descriptor table in device or pinned memory to fill,
// to copy, or to keep from being overwritten before an earlier launch has
// read it. A batch beyond kCopyPiecesPerLaunch pieces takes several
// launches.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/copy_plan.h"

namespace chorus {

// Pieces per launch: 1024 descriptors of 28 bytes fill most of the 32 KiB.
constexpr size_t kCopyPiecesPerLaunch = 1024;
// Bytes per thread block: with 256 threads, 8 16-byte words each, enough
// in flight per thread to keep the memory busy, and the grid of a large
// piece is spread over every multiprocessor.
constexpr uint64_t kCopyBytesPerBlock = 32 * 1024;

inline CopyLimits cuda_copy_limits() { return CopyLimits{kCopyPiecesPerLaunch, kCopyBytesPerBlock}; }

// Queues `launch` on `stream`; the error of the launch itself (not of the
// copy, which shows later, in the stream).
cudaError_t launch_batched_copy(const CopyLaunch& launch, cudaStream_t stream);

}  // namespace chorus
