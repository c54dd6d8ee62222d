// float16 (IEEE binary16) and bfloat16 conversions, round to nearest even.
// Reductions and scaling of these types compute in float32.
//
// The inline ones are also the CUDA device's (ops/cuda/ kernels call them),
// so a GPU rounds, and keeps NaN payloads, bit for bit as the host does;
// cuda_fp16.h's __float2half_rn and cuda_bf16.h's __float2bfloat16_rn make
// every NaN 0x7fff (seen on their host path). On the device they need IEEE
// float arithmetic (no flush to zero: never build them with --use_fast_math).
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/kernels/host_and_device.h"

namespace chorus {

CHORUS_HOST_DEVICE inline float bfloat16_to_float(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

CHORUS_HOST_DEVICE inline uint16_t float_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // keep NaN a quiet NaN
  }
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float float16_to_float(uint16_t value);
uint16_t float_to_float16(float value);

// Branch-free twins of float16_to_float and float_to_float16 with the same
// results for every input (NaN payloads included), written as arithmetic and
// selects so that loops over them vectorise; the shared-memory reduction
// widens and narrows whole blocks with them.
CHORUS_HOST_DEVICE inline float widen_float16(uint16_t value) {
  // Exponent and mantissa shifted into float position, then scaled by
  // 2^(127-15): exact for normal and subnormal halves alike. An all-ones
  // half exponent lands at or above 2^16 and becomes float infinity/NaN
  // (mantissa kept) by setting every exponent bit.
  const uint32_t magnitude = static_cast<uint32_t>(value & 0x7fffu) << 13;
  float scaled;
  std::memcpy(&scaled, &magnitude, sizeof(scaled));
  scaled *= 0x1p112f;
  uint32_t bits;
  std::memcpy(&bits, &scaled, sizeof(bits));
  bits = scaled >= 0x1p16f ? (bits | 0x7f800000u) : bits;
  bits |= static_cast<uint32_t>(value & 0x8000u) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

CHORUS_HOST_DEVICE inline uint16_t narrow_to_float16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t magnitude = bits & 0x7fffffffu;
  // Normal halves: rebias the exponent (127 -> 15) and drop 13 mantissa bits
  // rounding to nearest even; a carry moves into the exponent, up to
  // infinity, as it should.
  const uint32_t rebased = magnitude - (112u << 23);
  const uint32_t normal = (rebased + 0xfffu + ((rebased >> 13) & 1u)) >> 13;
  // Subnormal halves (below 2^-14): adding 0.5 puts the value's 2^-24 steps
  // in the float's last mantissa bits, and the FPU rounds to nearest even.
  float absolute;
  std::memcpy(&absolute, &magnitude, sizeof(absolute));
  const float shifted = absolute + 0.5f;
  uint32_t shifted_bits;
  std::memcpy(&shifted_bits, &shifted, sizeof(shifted_bits));
  const uint32_t subnormal = shifted_bits - 0x3f000000u;
  uint32_t half = magnitude < 0x38800000u ? subnormal : normal;
  half = magnitude >= 0x47800000u ? 0x7c00u : half;  // 2^16 and above: infinity
  half = magnitude > 0x7f800000u ? (0x7e00u | ((magnitude & 0x7fffffu) >> 13)) : half;  // quiet NaN
  return static_cast<uint16_t>(sign | half);
}

}  // namespace chorus
