// Kernels: float16 conversions (known values, rounding, special values and a
// brute-force reference), reduce_into for every dtype x op against a plain
// loop, and scale/divide.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/kernels/half.h"
#include "ops/kernels/reduce.h"
#include "ops/kernels/scale.h"

namespace chorus {
namespace {

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}
float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}
bool is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// ---------------------------------------------------------------- float16

TEST(Float16Test, DecodesKnownValues) {
  EXPECT_EQ(float_bits(float16_to_float(0x0000)), float_bits(0.0f));
  EXPECT_EQ(float_bits(float16_to_float(0x8000)), float_bits(-0.0f));
  EXPECT_EQ(float16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(float16_to_float(0xc000), -2.0f);
  EXPECT_EQ(float16_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(float16_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(float16_to_float(0x0400), std::ldexp(1.0f, -14));           // smallest normal
  EXPECT_EQ(float16_to_float(0x0001), std::ldexp(1.0f, -24));           // smallest subnormal
  EXPECT_EQ(float16_to_float(0x03ff), std::ldexp(1023.0f, -24));        // largest subnormal
  EXPECT_EQ(float16_to_float(0x8201), -std::ldexp(513.0f, -24));
  EXPECT_EQ(float16_to_float(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(float16_to_float(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(float16_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(float16_to_float(0x7c01)));
  EXPECT_TRUE(std::isnan(float16_to_float(0xfe00)));
}

TEST(Float16Test, EncodesKnownValues) {
  EXPECT_EQ(float_to_float16(0.0f), 0x0000);
  EXPECT_EQ(float_to_float16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_float16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_float16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_float16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(float_to_float16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_float16(0.1f), 0x2e66);
}

TEST(Float16Test, RoundsTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 (even mantissa) and 1 + 2^-10.
  EXPECT_EQ(float_to_float16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 lies halfway between 0x3c01 (odd) and 0x3c02 (even).
  EXPECT_EQ(float_to_float16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above / below a tie rounds to the nearer neighbour.
  EXPECT_EQ(float_to_float16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(float_to_float16(std::nextafter(1.0f + 3 * std::ldexp(1.0f, -11), 0.0f)), 0x3c01);
  // A carry out of the mantissa moves to the next binade: 2 - 2^-12 -> 2.
  EXPECT_EQ(float_to_float16(2.0f - std::ldexp(1.0f, -12)), 0x4000);
  EXPECT_EQ(float_to_float16(-(1.0f + 3 * std::ldexp(1.0f, -11))), 0xbc02);
}

TEST(Float16Test, OverflowsToInfinity) {
  EXPECT_EQ(float_to_float16(65519.0f), 0x7bff);  // below the tie with 65536
  EXPECT_EQ(float_to_float16(65520.0f), 0x7c00);  // tie; 0x7bff is odd, so up to infinity
  EXPECT_EQ(float_to_float16(1e6f), 0x7c00);
  EXPECT_EQ(float_to_float16(-1e6f), 0xfc00);
  EXPECT_EQ(float_to_float16(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(float_to_float16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_float16(-std::numeric_limits<float>::infinity()), 0xfc00);
}

TEST(Float16Test, HandlesSubnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // the half subnormal step
  EXPECT_EQ(float_to_float16(tiny), 0x0001);
  EXPECT_EQ(float_to_float16(-tiny), 0x8001);
  EXPECT_EQ(float_to_float16(tiny / 2), 0x0000);                        // tie -> even (zero)
  EXPECT_EQ(float_to_float16(std::nextafter(tiny / 2, 1.0f)), 0x0001);  // just above the tie
  EXPECT_EQ(float_to_float16(-tiny / 2), 0x8000);
  EXPECT_EQ(float_to_float16(tiny / 4), 0x0000);
  EXPECT_EQ(float_to_float16(3 * tiny / 2), 0x0002);  // tie between 1 and 2 -> 2
  EXPECT_EQ(float_to_float16(5 * tiny / 2), 0x0002);  // tie between 2 and 3 -> 2
  EXPECT_EQ(float_to_float16(1023 * tiny), 0x03ff);
  // Halfway between the largest subnormal and the smallest normal: even is 0x0400.
  EXPECT_EQ(float_to_float16(1023.5f * tiny), 0x0400);
  EXPECT_EQ(float_to_float16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_float16(-std::numeric_limits<float>::min()), 0x8000);
}

TEST(Float16Test, KeepsNaN) {
  EXPECT_TRUE(is_half_nan(float_to_float16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_half_nan(float_to_float16(-std::numeric_limits<float>::quiet_NaN())));
  // A payload only in the low 13 bits must not become infinity.
  EXPECT_TRUE(is_half_nan(float_to_float16(bits_float(0x7f800001u))));
  EXPECT_TRUE(is_half_nan(float_to_float16(bits_float(0xff800001u))));
}

TEST(Float16Test, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const uint16_t back = float_to_float16(float16_to_float(half));
    if (is_half_nan(half)) {
      EXPECT_TRUE(is_half_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, half) << std::hex << h;
    }
  }
}

// Round to nearest even by search over all finite non-negative halves (their
// bit patterns are ordered like their values): an independent reference.
uint16_t reference_float16(float value) {
  const double x = std::fabs(static_cast<double>(value));
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  if (x >= 65520.0) return sign | 0x7c00;
  uint32_t lo = 0;
  uint32_t hi = 0x7bff;
  while (lo < hi) {  // largest half <= x
    const uint32_t mid = (lo + hi + 1) / 2;
    if (static_cast<double>(float16_to_float(static_cast<uint16_t>(mid))) <= x) lo = mid; else hi = mid - 1;
  }
  if (lo == 0x7bff) return sign | 0x7bff;
  const double below = float16_to_float(static_cast<uint16_t>(lo));
  const double above = float16_to_float(static_cast<uint16_t>(lo + 1));
  uint32_t pick = lo;
  if (x - below > above - x || (x - below == above - x && (lo & 1u) != 0)) pick = lo + 1;
  return static_cast<uint16_t>(sign | pick);
}

TEST(Float16Test, MatchesReferenceOnRandomFloats) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    // Exponents around the half range (including subnormal and overflow).
    const uint32_t exponent = 127 - 27 + rng() % 46;
    const uint32_t bits = (rng() & 0x80000000u) | (exponent << 23) | (rng() & 0x7fffffu);
    const float value = bits_float(bits);
    ASSERT_EQ(float_to_float16(value), reference_float16(value)) << value;
  }
}

TEST(BFloat16Test, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);       // tie -> even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);   // tie -> even
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

// ---------------------------------------------------------------- reduce_into

const DataType kReducible[] = {DataType::kUInt8,   DataType::kInt8,     DataType::kInt16,
                               DataType::kUInt16,  DataType::kInt32,    DataType::kInt64,
                               DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                               DataType::kFloat64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

float half_to_float(DataType dtype, uint16_t v) {
  return dtype == DataType::kFloat16 ? float16_to_float(v) : bfloat16_to_float(v);
}
uint16_t float_to_half(DataType dtype, float v) {
  return dtype == DataType::kFloat16 ? float_to_float16(v) : float_to_bfloat16(v);
}
// uint16_t elements hold float16/bfloat16 bits, or uint16 integers.
bool is_half(DataType dtype) { return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16; }

// The plain loop's element operation. Integers wrap: computed in uint64 and
// truncated (two's complement), a different route from the kernel's.
template <typename T>
T reference_op(DataType dtype, ReduceOp op, T a, T b) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (is_half(dtype)) {  // float16 / bfloat16 bits
      return float_to_half(dtype, reference_op(DataType::kFloat32, op, half_to_float(dtype, a), half_to_float(dtype, b)));
    }
  }
  switch (op) {
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
    case ReduceOp::kSum:
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      } else {
        return a + b;
      }
    case ReduceOp::kProduct:
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      } else {
        return a * b;
      }
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;  // not element-wise
  }
  return T{};
}

template <typename T>
std::vector<T> random_values(DataType dtype, int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<T> out(static_cast<size_t>(count));
  for (auto& v : out) {
    if (is_half(dtype)) {
      v = static_cast<T>(float_to_half(dtype, uniform(rng)));
    } else if constexpr (std::is_integral_v<T>) {
      v = static_cast<T>(rng());  // full range, so sums and products wrap
    } else {
      v = static_cast<T>(uniform(rng));
    }
  }
  return out;
}

template <typename T>
void check_reduce(DataType dtype, ReduceOp op, int64_t count, std::mt19937_64& rng) {
  std::vector<T> inout = random_values<T>(dtype, count, rng);
  const std::vector<T> in = random_values<T>(dtype, count, rng);
  std::vector<T> expected = inout;
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = reference_op(dtype, op, expected[i], in[i]);
  ASSERT_TRUE(reduce_into(inout.data(), in.data(), count, dtype, op).ok());
  for (size_t i = 0; i < expected.size(); ++i) {
    // Bitwise: the kernel must do exactly the plain loop's arithmetic.
    ASSERT_EQ(0, std::memcmp(&inout[i], &expected[i], sizeof(T)))
        << dtype_name(dtype) << " " << reduce_op_name(op) << " count " << count << " index " << i;
  }
}

TEST(ReduceIntoTest, EveryDtypeAndOpMatchesPlainLoop) {
  std::mt19937_64 rng(7);
  for (DataType dtype : kReducible) {
    for (ReduceOp op : kOps) {
      for (int64_t count : {0, 1, 7, 63, 64, 65, 129, 1000, 12345}) {
        switch (dtype) {
          case DataType::kUInt8: check_reduce<uint8_t>(dtype, op, count, rng); break;
          case DataType::kInt8: check_reduce<int8_t>(dtype, op, count, rng); break;
          case DataType::kInt16: check_reduce<int16_t>(dtype, op, count, rng); break;
          case DataType::kUInt16: check_reduce<uint16_t>(dtype, op, count, rng); break;
          case DataType::kInt32: check_reduce<int32_t>(dtype, op, count, rng); break;
          case DataType::kInt64: check_reduce<int64_t>(dtype, op, count, rng); break;
          case DataType::kFloat16:
          case DataType::kBFloat16: check_reduce<uint16_t>(dtype, op, count, rng); break;
          case DataType::kFloat32: check_reduce<float>(dtype, op, count, rng); break;
          case DataType::kFloat64: check_reduce<double>(dtype, op, count, rng); break;
          case DataType::kBool: break;
        }
      }
    }
  }
}

TEST(ReduceIntoTest, HalfRoundsOnceInFloat32) {
  // 2048 + 1 is not a float16 (spacing 2 there): the sum rounds to even, 2048.
  uint16_t a = float_to_float16(2048.0f);
  const uint16_t b = float_to_float16(1.0f);
  ASSERT_TRUE(reduce_into(&a, &b, 1, DataType::kFloat16, ReduceOp::kSum).ok());
  EXPECT_EQ(float16_to_float(a), 2048.0f);
  int32_t x = std::numeric_limits<int32_t>::max();
  const int32_t one = 1;
  ASSERT_TRUE(reduce_into(&x, &one, 1, DataType::kInt32, ReduceOp::kSum).ok());
  EXPECT_EQ(x, std::numeric_limits<int32_t>::min());  // wraps
}

TEST(ReduceIntoTest, RejectsAverageBoolAndBadCounts) {
  float a[2] = {1, 2};
  const float b[2] = {3, 4};
  Status s = reduce_into(a, b, 2, DataType::kFloat32, ReduceOp::kAverage);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("average"), std::string::npos) << s.message();
  bool x[1] = {true};
  const bool y[1] = {false};
  s = reduce_into(x, y, 1, DataType::kBool, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bool"), std::string::npos) << s.message();
  EXPECT_EQ(reduce_into(a, b, -1, DataType::kFloat32, ReduceOp::kSum).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reduce_into(nullptr, b, 1, DataType::kFloat32, ReduceOp::kSum).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(reduce_into(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum).ok());
  EXPECT_EQ(a[0], 1.0f);
}

// ---------------------------------------------------------------- scale / divide

template <typename T>
void check_scale(DataType dtype, double factor, int64_t count, bool in_place) {
  std::mt19937_64 rng(static_cast<uint64_t>(count) * 31 + (in_place ? 1 : 0));
  const std::vector<T> in = random_values<T>(dtype, count, rng);
  std::vector<T> expected(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if constexpr (std::is_same_v<T, uint16_t>) {
      expected[i] = float_to_half(dtype, half_to_float(dtype, in[i]) * static_cast<float>(factor));
    } else {
      expected[i] = in[i] * static_cast<T>(factor);
    }
  }
  std::vector<T> out = in_place ? in : std::vector<T>(in.size());
  const void* src = in_place ? static_cast<const void*>(out.data()) : in.data();
  ASSERT_TRUE(scale(src, out.data(), count, dtype, factor).ok());
  // Bitwise (memcmp needs non-null pointers, so not for count 0).
  ASSERT_TRUE(out.empty() || std::memcmp(out.data(), expected.data(), out.size() * sizeof(T)) == 0)
      << dtype_name(dtype) << " count " << count << (in_place ? " in place" : "");
}

TEST(ScaleTest, FloatingDtypesMultiply) {
  for (int64_t count : {0, 1, 65, 1000}) {
    for (bool in_place : {false, true}) {
      check_scale<float>(DataType::kFloat32, 0.37, count, in_place);
      check_scale<double>(DataType::kFloat64, 0.37, count, in_place);
      check_scale<uint16_t>(DataType::kFloat16, 0.37, count, in_place);
      check_scale<uint16_t>(DataType::kBFloat16, 0.37, count, in_place);
    }
  }
}

TEST(ScaleTest, IntegersCopyWithFactorOneAndBoolOnlyThen) {
  const int64_t in[3] = {(int64_t{1} << 53) + 1, -6, 7};  // beyond double's 53 bits: unchanged
  int64_t out[3] = {0, 0, 0};
  ASSERT_TRUE(scale(in, out, 3, DataType::kInt64, 1.0).ok());
  EXPECT_EQ(std::vector<int64_t>(out, out + 3), std::vector<int64_t>(in, in + 3));
  ASSERT_TRUE(scale(out, out, 3, DataType::kInt64, 1.0).ok());
  EXPECT_EQ(out[0], (int64_t{1} << 53) + 1);
  const bool flags[2] = {true, false};
  bool copy[2] = {false, true};
  ASSERT_TRUE(scale(flags, copy, 2, DataType::kBool, 1.0).ok());
  EXPECT_TRUE(copy[0]);
  EXPECT_FALSE(copy[1]);
  const Status boolean = scale(flags, copy, 2, DataType::kBool, 2.0);
  EXPECT_EQ(boolean.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(boolean.message().find("bool"), std::string::npos) << boolean.message();
  EXPECT_EQ(scale(in, out, -1, DataType::kFloat32, 1.0).code(), StatusCode::kInvalidArgument);
}

// Horovod's rule, computed another way: the exact product's double rounding
// is what `double * double` gives, then truncation (std::trunc) and the
// dtype's bounds from numeric_limits.
template <typename T>
T horovod_scaled(T value, double factor) {
  const double scaled = std::trunc(static_cast<double>(value) * factor);
  if (scaled >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
  if (scaled <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  return static_cast<T>(scaled);
}

template <typename T>
void check_integer_scale(DataType dtype) {
  std::mt19937_64 rng(static_cast<uint64_t>(dtype) + 99);
  for (double factor : {0.5, -0.37, 3.0, 1e-3, 2.5, -1.0, 1.0 / 3.0, 1e30}) {
    for (int64_t count : {1, 65, 1000}) {
      for (bool in_place : {false, true}) {
        const std::vector<T> in = random_values<T>(dtype, count, rng);
        std::vector<T> expected(in.size());
        for (size_t i = 0; i < in.size(); ++i) expected[i] = horovod_scaled(in[i], factor);
        std::vector<T> out = in_place ? in : std::vector<T>(in.size());
        const void* src = in_place ? static_cast<const void*>(out.data()) : in.data();
        ASSERT_TRUE(scale(src, out.data(), count, dtype, factor).ok());
        EXPECT_EQ(out, expected) << dtype_name(dtype) << " factor " << factor << " count " << count;
      }
    }
  }
}

TEST(ScaleTest, IntegersScaleThroughDoubleTruncatedAndSaturated) {
  check_integer_scale<uint8_t>(DataType::kUInt8);
  check_integer_scale<int8_t>(DataType::kInt8);
  check_integer_scale<int16_t>(DataType::kInt16);
  check_integer_scale<uint16_t>(DataType::kUInt16);
  check_integer_scale<int32_t>(DataType::kInt32);
  check_integer_scale<int64_t>(DataType::kInt64);
}

TEST(ScaleTest, IntegerScalingCasesSpelledOut) {
  // Truncation toward zero, not floor; the double product's own rounding
  // (3 * 0.1 is 0.30000000000000004, 100 * 0.29 is 28.999999999999996).
  int16_t i16[4] = {-7, 7, 3, 10};
  ASSERT_TRUE(scale(i16, i16, 4, DataType::kInt16, 0.5).ok());
  EXPECT_EQ(std::vector<int16_t>(i16, i16 + 4), (std::vector<int16_t>{-3, 3, 1, 5}));
  int16_t big[2] = {30000, -30000};
  ASSERT_TRUE(scale(big, big, 2, DataType::kInt16, 2.0).ok());  // saturates
  EXPECT_EQ(big[0], 32767);
  EXPECT_EQ(big[1], -32768);
  uint16_t u16[3] = {5, 40000, 65535};
  uint16_t u16_out[3];
  ASSERT_TRUE(scale(u16, u16_out, 3, DataType::kUInt16, -1.0).ok());  // negative: 0
  EXPECT_EQ(std::vector<uint16_t>(u16_out, u16_out + 3), (std::vector<uint16_t>{0, 0, 0}));
  ASSERT_TRUE(scale(u16, u16_out, 3, DataType::kUInt16, 1.5).ok());
  EXPECT_EQ(std::vector<uint16_t>(u16_out, u16_out + 3), (std::vector<uint16_t>{7, 60000, 65535}));
  int32_t i32[3] = {3, 10, INT32_MAX};
  int32_t i32_out[3];
  ASSERT_TRUE(scale(i32, i32_out, 3, DataType::kInt32, 0.1).ok());
  EXPECT_EQ(std::vector<int32_t>(i32_out, i32_out + 3), (std::vector<int32_t>{0, 1, 214748364}));
  const int32_t hundred = 100;
  int32_t scaled_hundred = 0;
  ASSERT_TRUE(scale(&hundred, &scaled_hundred, 1, DataType::kInt32, 0.29).ok());
  EXPECT_EQ(scaled_hundred, 28);
  // 2^53 + 1 becomes 2^53 in double before it is doubled.
  int64_t i64[2] = {(int64_t{1} << 53) + 1, INT64_MAX};
  ASSERT_TRUE(scale(i64, i64, 2, DataType::kInt64, 2.0).ok());
  EXPECT_EQ(i64[0], int64_t{1} << 54);
  EXPECT_EQ(i64[1], INT64_MAX);
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    const Status s = scale(i16, i16, 2, DataType::kInt16, bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("finite"), std::string::npos) << s.message();
  }
}

TEST(DivideTest, IntegersTruncateTowardZero) {
  int32_t i32[6] = {7, -7, 8, -1, 0, std::numeric_limits<int32_t>::min()};
  ASSERT_TRUE(divide(i32, 6, DataType::kInt32, 2).ok());
  EXPECT_EQ(std::vector<int32_t>(i32, i32 + 6), (std::vector<int32_t>{3, -3, 4, 0, 0, -1073741824}));
  int8_t i8[3] = {-128, 127, -5};
  ASSERT_TRUE(divide(i8, 3, DataType::kInt8, 3).ok());
  EXPECT_EQ(std::vector<int8_t>(i8, i8 + 3), (std::vector<int8_t>{-42, 42, -1}));
  uint8_t u8[2] = {255, 3};
  ASSERT_TRUE(divide(u8, 2, DataType::kUInt8, 4).ok());
  EXPECT_EQ(std::vector<uint8_t>(u8, u8 + 2), (std::vector<uint8_t>{63, 0}));
  int8_t big_divisor[1] = {-100};  // a divisor beyond int8's range still divides
  ASSERT_TRUE(divide(big_divisor, 1, DataType::kInt8, 300).ok());
  EXPECT_EQ(big_divisor[0], 0);
  int64_t i64[2] = {std::numeric_limits<int64_t>::max(), -9};
  ASSERT_TRUE(divide(i64, 2, DataType::kInt64, 4).ok());
  EXPECT_EQ(i64[0], std::numeric_limits<int64_t>::max() / 4);
  EXPECT_EQ(i64[1], -2);
}

TEST(DivideTest, FloatsMultiplyByReciprocal) {
  float f[3] = {1.0f, -3.0f, 10.0f};
  ASSERT_TRUE(divide(f, 3, DataType::kFloat32, 4).ok());
  EXPECT_EQ(std::vector<float>(f, f + 3), (std::vector<float>{0.25f, -0.75f, 2.5f}));
  uint16_t h[1] = {float_to_float16(3.0f)};
  ASSERT_TRUE(divide(h, 1, DataType::kFloat16, 2).ok());
  EXPECT_EQ(float16_to_float(h[0]), 1.5f);
  double d[1] = {1.0};
  ASSERT_TRUE(divide(d, 1, DataType::kFloat64, 3).ok());
  EXPECT_EQ(d[0], 1.0 * (1.0 / 3.0));
}

TEST(DivideTest, RejectsBoolAndNonPositiveDivisors) {
  int32_t x[1] = {4};
  EXPECT_EQ(divide(x, 1, DataType::kInt32, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(divide(x, 1, DataType::kInt32, -2).code(), StatusCode::kInvalidArgument);
  bool b[1] = {true};
  EXPECT_EQ(divide(b, 1, DataType::kBool, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(x[0], 4);
}

}  // namespace
}  // namespace chorus
