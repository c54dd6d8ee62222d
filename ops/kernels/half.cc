// IEEE binary16 <-> binary32 conversions by bit manipulation. Both directions
// are exact where the value is representable; narrowing rounds to nearest,
// ties to even, and keeps subnormals, infinities and NaNs (as quiet NaNs).
#include "ops/kernels/half.h"

#include <cstdint>
#include <cstring>

namespace chorus {
namespace {

// binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
// binary32: 1 sign bit, 8 exponent bits (bias 127), 23 mantissa bits.
constexpr uint32_t kHalfMantissaBits = 10;
constexpr uint32_t kFloatMantissaBits = 23;
constexpr uint32_t kMantissaShift = kFloatMantissaBits - kHalfMantissaBits;  // 13
constexpr int kBiasDelta = 127 - 15;
constexpr uint16_t kHalfInf = 0x7c00;
constexpr uint16_t kHalfQuietBit = 0x0200;

float bits_to_float(uint32_t bits) {
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// Shifts `value` right by `shift` (1..31) and rounds to nearest, ties to even.
// A carry out of the mantissa lands in the exponent field, which is exactly
// the next representable value (up to infinity), so callers need no fix-up.
uint32_t shift_right_round_even(uint32_t value, uint32_t shift) {
  const uint32_t result = value >> shift;
  const uint32_t remainder = value & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u) != 0)) return result + 1u;
  return result;
}

}  // namespace

float float16_to_float(uint16_t value) {
  const uint32_t sign = static_cast<uint32_t>(value & 0x8000u) << 16;
  const uint32_t exponent = (value >> kHalfMantissaBits) & 0x1fu;
  uint32_t mantissa = value & 0x3ffu;

  if (exponent == 0x1fu) {
    // Infinity or NaN; a NaN keeps its payload (so stays a NaN).
    return bits_to_float(sign | 0x7f800000u | (mantissa << kMantissaShift));
  }
  if (exponent != 0) {
    return bits_to_float(sign | ((exponent + kBiasDelta) << kFloatMantissaBits) |
                         (mantissa << kMantissaShift));
  }
  if (mantissa == 0) return bits_to_float(sign);  // +-0
  // Subnormal half (mantissa * 2^-24) is a normal float: normalise it by
  // shifting the leading one up to the implicit-bit position.
  uint32_t float_exponent = 1 + kBiasDelta;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    --float_exponent;
  }
  mantissa &= 0x3ffu;
  return bits_to_float(sign | (float_exponent << kFloatMantissaBits) | (mantissa << kMantissaShift));
}

uint16_t float_to_float16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const int exponent = static_cast<int>((bits >> kFloatMantissaBits) & 0xffu);
  const uint32_t mantissa = bits & 0x7fffffu;

  if (exponent == 0xff) {
    if (mantissa == 0) return static_cast<uint16_t>(sign | kHalfInf);
    // NaN: keep the top payload bits and force the quiet bit so a payload
    // living only in the low bits cannot turn into infinity.
    return static_cast<uint16_t>(sign | kHalfInf | kHalfQuietBit | (mantissa >> kMantissaShift));
  }

  const int half_exponent = exponent - kBiasDelta;
  if (half_exponent >= 0x1f) return static_cast<uint16_t>(sign | kHalfInf);  // overflow

  if (half_exponent > 0) {
    // Normal range: drop 13 mantissa bits with rounding; a carry may bump the
    // exponent, and from 30 that yields infinity (0x7c00), as it should.
    const uint32_t packed = (static_cast<uint32_t>(half_exponent) << kFloatMantissaBits) | mantissa;
    return static_cast<uint16_t>(sign | shift_right_round_even(packed, kMantissaShift));
  }

  // Subnormal or zero result. The half subnormal step is 2^-24; the full
  // float significand (implicit one included) is in steps of
  // 2^(exponent - 150), so the result is significand >> (14 - half_exponent).
  // Below half_exponent -10 the value is under half the smallest subnormal
  // (2^-25) and rounds to zero; this also covers float zeros and subnormals.
  if (half_exponent < -10) return sign;
  const uint32_t significand = mantissa | 0x800000u;
  const auto shift = static_cast<uint32_t>(14 - half_exponent);  // 14..24
  // Rounding up from the largest subnormal gives 0x400, the smallest normal.
  return static_cast<uint16_t>(sign | shift_right_round_even(significand, shift));
}

}  // namespace chorus
