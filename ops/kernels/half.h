// float16 (IEEE binary16) and bfloat16 conversions, round to nearest even.
// Reductions and scaling of these types compute in float32.
#pragma once

#include <cstdint>
#include <cstring>

namespace chorus {

inline float bfloat16_to_float(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

inline uint16_t float_to_bfloat16(float value) {
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

}  // namespace chorus
