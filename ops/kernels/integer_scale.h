// Scaling an integer element by a double factor, Horovod's way
// (horovod/common/ops/collective_operations.h, ScaleBufferCPUImpl:
// `output[i] = scale_factor * input[i]` with a double factor): the element
// converted to double (exact up to 2^53), multiplied in double (rounded to
// nearest), and truncated toward zero back to its type. A test can predict
// every bit by doing the same.
//
// A product outside the type's range is undefined behaviour in Horovod's
// code (x86 happens to wrap 8- and 16-bit types and to give the minimum for
// 32- and 64-bit ones); Chorus saturates to the type's minimum or maximum,
// which is what a GPU's float-to-integer conversion does, so that host and
// device kernels (both call this) give the same bits.
#pragma once

#include <cstdint>

#include "ops/kernels/host_and_device.h"

namespace chorus {

template <typename T>
CHORUS_HOST_DEVICE inline T scale_integer(T value, double factor) {
  constexpr int kBits = 8 * static_cast<int>(sizeof(T));
  constexpr bool kSigned = static_cast<T>(-1) < static_cast<T>(0);
  // 2^(bits-1) and 2^bits are exact in double.
  constexpr double kHalfRange = static_cast<double>(uint64_t{1} << (kBits - 1));
  constexpr double kLowest = kSigned ? -kHalfRange : 0.0;
  constexpr double kAboveMax = kSigned ? kHalfRange : 2.0 * kHalfRange;
  const double scaled = static_cast<double>(value) * factor;
  if (scaled != scaled) return T(0);  // NaN: unreachable with a finite factor
  // The bounds as bit patterns (the signed minimum is 1 << (bits - 1)).
  if (scaled >= kAboveMax) return static_cast<T>(kSigned ? (uint64_t{1} << (kBits - 1)) - 1 : ~uint64_t{0});
  // Anything above kLowest - 1 truncates to kLowest or more.
  if (scaled <= kLowest - 1.0) return static_cast<T>(kSigned ? uint64_t{1} << (kBits - 1) : 0);
  return static_cast<T>(scaled);
}

}  // namespace chorus
