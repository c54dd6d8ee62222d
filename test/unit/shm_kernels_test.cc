// Kernels of the shared-memory allreduce: the branch-free float16
// conversions (widen_float16, narrow_to_float16) against the scalar ones for
// every half and a spread of floats, and reduce_ranks_in_order against a
// pairwise fold in rank order, including output aliasing an input; its
// one-pass scaling (float16/bfloat16 averages rounded once); and
// copy_streaming against the bytes it was given, at every alignment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/kernels/half.h"
#include "ops/kernels/ordered_reduce.h"
#include "ops/kernels/reduce.h"
#include "ops/kernels/scale.h"
#include "ops/kernels/streaming_copy.h"

namespace chorus {
namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}
float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

TEST(ShmKernels, WidenFloat16MatchesTheScalarConversionForEveryHalf) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    ASSERT_EQ(bits_of(widen_float16(half)), bits_of(float16_to_float(half))) << std::hex << h;
  }
}

TEST(ShmKernels, NarrowToFloat16MatchesTheScalarConversion) {
  // Every half, the floats next to it, and the midpoints between halves
  // (ties round to even), then random floats over the whole bit range.
  std::vector<uint32_t> samples;
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint32_t f = bits_of(float16_to_float(static_cast<uint16_t>(h)));
    samples.insert(samples.end(), {f, f + 1, f - 1, f + 0x1000, f + 0xfff, f + 0x1001});
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) samples.push_back(static_cast<uint32_t>(rng()));
  for (uint32_t b : {0x477ff000u, 0x477fefffu, 0x47800000u, 0x7f800000u, 0x7fc00001u, 0x33000000u,
                     0x33000001u, 0x387fe000u, 0x38800000u}) {
    samples.push_back(b);
    samples.push_back(b | 0x80000000u);
  }
  for (uint32_t b : samples) {
    const float f = float_of(b);
    ASSERT_EQ(narrow_to_float16(f), float_to_float16(f)) << std::hex << b;
  }
}

template <typename T>
std::vector<T> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> out(static_cast<size_t>(n));
  for (auto& v : out) {
    if constexpr (std::is_floating_point<T>::value) {
      v = static_cast<T>(std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    } else {
      v = static_cast<T>(rng());
    }
  }
  return out;
}

// Pairwise fold in rank order with the existing kernel: for these dtypes the
// one-pass kernel must give the same bits.
template <typename T>
void expect_same_as_pairwise(DataType dtype, ReduceOp op, int ranks, int64_t n) {
  std::vector<std::vector<T>> inputs;
  std::vector<const void*> pointers;
  for (int r = 0; r < ranks; ++r) inputs.push_back(random_values<T>(n, static_cast<uint32_t>(r * 31 + n)));
  for (auto& input : inputs) pointers.push_back(input.data());
  std::vector<T> expected = inputs[0];
  for (int r = 1; r < ranks; ++r) ASSERT_TRUE(reduce_into(expected.data(), inputs[r].data(), n, dtype, op).ok());
  std::vector<T> out(static_cast<size_t>(n));
  ASSERT_TRUE(reduce_ranks_in_order(out.data(), pointers.data(), ranks, n, dtype, op).ok());
  if (n == 0) return;  // memcmp of the empty vectors' null data() would be undefined
  ASSERT_EQ(0, std::memcmp(out.data(), expected.data(), static_cast<size_t>(n) * sizeof(T)))
      << dtype_name(dtype) << " " << reduce_op_name(op) << " ranks " << ranks << " n " << n;
  // In place into the first input.
  ASSERT_TRUE(reduce_ranks_in_order(inputs[0].data(), pointers.data(), ranks, n, dtype, op).ok());
  ASSERT_EQ(0, std::memcmp(inputs[0].data(), expected.data(), static_cast<size_t>(n) * sizeof(T)));
}

TEST(ShmKernels, OneRankPassFoldEqualsPairwiseFoldInRankOrder) {
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (int ranks : {1, 2, 3, 5}) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{255}, int64_t{256}, int64_t{1001}}) {
        expect_same_as_pairwise<float>(DataType::kFloat32, op, ranks, n);
        expect_same_as_pairwise<double>(DataType::kFloat64, op, ranks, n);
        expect_same_as_pairwise<int8_t>(DataType::kInt8, op, ranks, n);
        expect_same_as_pairwise<uint8_t>(DataType::kUInt8, op, ranks, n);
        expect_same_as_pairwise<int16_t>(DataType::kInt16, op, ranks, n);
        expect_same_as_pairwise<uint16_t>(DataType::kUInt16, op, ranks, n);
        expect_same_as_pairwise<int32_t>(DataType::kInt32, op, ranks, n);
        expect_same_as_pairwise<int64_t>(DataType::kInt64, op, ranks, n);
      }
    }
  }
}

TEST(ShmKernels, HalfTypesAccumulateInFloat32AndRoundOnce) {
  const int ranks = 4;
  const int64_t n = 777;
  std::vector<std::vector<uint16_t>> halves(ranks), brains(ranks);
  std::vector<const void*> half_ptrs, brain_ptrs;
  std::mt19937 rng(3);
  for (int r = 0; r < ranks; ++r) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
      halves[r].push_back(float_to_float16(v));
      brains[r].push_back(float_to_bfloat16(v));
    }
    half_ptrs.push_back(halves[r].data());
    brain_ptrs.push_back(brains[r].data());
  }
  std::vector<uint16_t> half_out(n), brain_out(n);
  ASSERT_TRUE(reduce_ranks_in_order(half_out.data(), half_ptrs.data(), ranks, n, DataType::kFloat16, ReduceOp::kSum).ok());
  ASSERT_TRUE(reduce_ranks_in_order(brain_out.data(), brain_ptrs.data(), ranks, n, DataType::kBFloat16, ReduceOp::kSum).ok());
  for (int64_t i = 0; i < n; ++i) {
    float h = 0, b = 0;
    for (int r = 0; r < ranks; ++r) {
      h += float16_to_float(halves[r][i]);
      b += bfloat16_to_float(brains[r][i]);
    }
    ASSERT_EQ(half_out[i], float_to_float16(h)) << i;
    ASSERT_EQ(brain_out[i], float_to_bfloat16(b)) << i;
  }
}

TEST(ShmKernels, BadArgumentsAreRefusedWithTheReason) {
  float x = 0;
  const void* in[] = {&x};
  EXPECT_NE(reduce_ranks_in_order(&x, in, 1, 1, DataType::kFloat32, ReduceOp::kAverage).message().find("average"),
            std::string::npos);
  EXPECT_NE(reduce_ranks_in_order(&x, in, 1, 1, DataType::kBool, ReduceOp::kSum).message().find("bool"),
            std::string::npos);
  EXPECT_NE(reduce_ranks_in_order(&x, in, 0, 1, DataType::kFloat32, ReduceOp::kSum).message().find("at least 1"),
            std::string::npos);
  const void* null_in[] = {nullptr};
  EXPECT_NE(reduce_ranks_in_order(&x, null_in, 1, 1, DataType::kFloat32, ReduceOp::kSum).message().find("input 0 is null"),
            std::string::npos);
  EXPECT_TRUE(reduce_ranks_in_order(nullptr, null_in, 1, 0, DataType::kFloat32, ReduceOp::kSum).ok());
  int32_t i = 0;
  const void* int_in[] = {&i};
  EXPECT_NE(reduce_ranks_in_order_to(ReducedOutput{&i, 0.5}, int_in, 1, 1, DataType::kInt32, ReduceOp::kSum)
                .message()
                .find("scaled by 1, got 0.5"),
            std::string::npos);
}

// Random bytes as `count` elements of `dtype`; float16/bfloat16 from floats
// in [-1, 1] (random bits would be mostly NaN and infinity).
std::vector<uint8_t> random_elements(DataType dtype, int64_t count, uint32_t seed) {
  std::vector<uint8_t> out(static_cast<size_t>(count) * dtype_size(dtype));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (int64_t i = 0; i < count; ++i) {
    uint8_t* at = out.data() + i * static_cast<int64_t>(dtype_size(dtype));
    switch (dtype) {
      case DataType::kFloat32: { const float v = static_cast<float>(value(rng)); std::memcpy(at, &v, 4); break; }
      case DataType::kFloat64: { const double v = value(rng); std::memcpy(at, &v, 8); break; }
      case DataType::kFloat16: { const uint16_t v = float_to_float16(static_cast<float>(value(rng))); std::memcpy(at, &v, 2); break; }
      case DataType::kBFloat16: { const uint16_t v = float_to_bfloat16(static_cast<float>(value(rng))); std::memcpy(at, &v, 2); break; }
      default:
        for (size_t b = 0; b < dtype_size(dtype); ++b) at[b] = static_cast<uint8_t>(rng());
    }
  }
  return out;
}

// What the one-pass reduce-and-scale gives for float16/bfloat16: the ranks'
// values added in float32 in rank order, times the factor as a float,
// rounded to 16 bits once (scalar conversions, not the kernel's).
std::vector<uint8_t> half_scaled_sum(DataType dtype, ReduceOp op, const std::vector<std::vector<uint8_t>>& inputs,
                                     int64_t n, double factor) {
  const bool f16 = dtype == DataType::kFloat16;
  std::vector<uint8_t> out(static_cast<size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    float acc = 0;
    for (size_t r = 0; r < inputs.size(); ++r) {
      uint16_t bits;
      std::memcpy(&bits, inputs[r].data() + 2 * i, 2);
      const float v = f16 ? float16_to_float(bits) : bfloat16_to_float(bits);
      if (r == 0) acc = v;
      else if (op == ReduceOp::kSum) acc += v;
      else if (op == ReduceOp::kProduct) acc *= v;
      else acc = std::max(acc, v);
    }
    const float scaled = acc * static_cast<float>(factor);
    const uint16_t rounded = f16 ? float_to_float16(scaled) : float_to_bfloat16(scaled);
    std::memcpy(out.data() + 2 * i, &rounded, 2);
  }
  return out;
}

// The shared-memory allreduce's owner (and OrderedReduction on MPI) reduces
// and scales its share in one pass: for float32, float64 and the integers
// (factor 1) the same bits as the reduction, then scale(); float16 and
// bfloat16 multiply the float32 accumulation and round once, where scale()
// after the reduction would round the sum to 16 bits first. Out of place
// and in place.
TEST(ShmKernels, ReduceAndScaleInOnePassEqualsReduceThenScaleAndRoundsHalvesOnce) {
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
                             DataType::kInt8,    DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,
                             DataType::kInt32,   DataType::kInt64};
  for (DataType dtype : dtypes) {
    const size_t esize = dtype_size(dtype);
    const std::vector<double> factors =
        is_floating_point(dtype) ? std::vector<double>{1.0, 0.5, 1.0 / 3.0} : std::vector<double>{1.0};
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProduct}) {
      for (double factor : factors) {
        for (int ranks : {1, 2, 3}) {
          for (int64_t n : {int64_t{1}, int64_t{256}, int64_t{1001}}) {
            std::vector<std::vector<uint8_t>> inputs;
            std::vector<const void*> pointers;
            for (int r = 0; r < ranks; ++r) {
              inputs.push_back(random_elements(dtype, n, static_cast<uint32_t>(r * 7 + n)));
            }
            for (auto& input : inputs) pointers.push_back(input.data());
            std::vector<uint8_t> expected(static_cast<size_t>(n) * esize);
            if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
              expected = half_scaled_sum(dtype, op, inputs, n, factor);
            } else {
              ASSERT_TRUE(reduce_ranks_in_order(expected.data(), pointers.data(), ranks, n, dtype, op).ok());
              ASSERT_TRUE(scale(expected.data(), expected.data(), n, dtype, factor).ok());
            }

            std::vector<uint8_t> out(expected.size(), 0xa5);
            ASSERT_TRUE(reduce_ranks_in_order_to(ReducedOutput{out.data(), factor}, pointers.data(), ranks, n,
                                                 dtype, op)
                            .ok());
            const std::string what = std::string(dtype_name(dtype)) + " " + reduce_op_name(op) + " factor " +
                                     std::to_string(factor) + " ranks " + std::to_string(ranks) + " n " +
                                     std::to_string(n);
            EXPECT_EQ(out, expected) << what;
            // In place into the first input.
            ASSERT_TRUE(reduce_ranks_in_order_to(ReducedOutput{inputs[0].data(), factor}, pointers.data(), ranks, n,
                                                 dtype, op)
                            .ok());
            EXPECT_EQ(inputs[0], expected) << what << " in place";
          }
        }
      }
    }
  }
}

// The case of issue 24: 1, 2^-11 and 0 in float16 on 3 ranks, averaged.
// The sum 1 + 2^-11 lies halfway between two float16 values and rounds to
// 1; 1/3 of that rounds to 0.333251953125, but the mean is 683/2048 =
// 0.33349609375 exactly.
TEST(ShmKernels, Float16AverageOfTheIssueRoundsOnce) {
  const uint16_t one = float_to_float16(1.0f);
  const uint16_t tiny = float_to_float16(0x1p-11f);
  const uint16_t zero = 0;
  const void* inputs[] = {&one, &tiny, &zero};
  uint16_t out = 0;
  ASSERT_TRUE(reduce_ranks_in_order_to(ReducedOutput{&out, 1.0 / 3.0}, inputs, 3, 1, DataType::kFloat16,
                                       ReduceOp::kSum)
                  .ok());
  EXPECT_EQ(float16_to_float(out), 0.33349609375f);
}

// Values whose float32 sums are exact (exponents in [-4, 1]) averaged over
// 1-4 ranks, with and without a postscale of 1/3: the result is the exact
// mean rounded once to the nearest 16-bit value (ties to even), computed
// here in double, for every element.
TEST(ShmKernels, HalfAveragesAreTheExactMeanRoundedOnce) {
  std::mt19937_64 rng(24);
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool f16 = dtype == DataType::kFloat16;
    const int mantissa_bits = f16 ? 10 : 7;
    const int digits = mantissa_bits + 1;
    const int min_exponent = f16 ? -14 : -126;
    auto round_once = [&](double v) {
      if (v == 0) return v;
      int exponent = 0;
      std::frexp(v, &exponent);
      const double ulp = std::ldexp(1.0, std::max(exponent - 1, min_exponent) - (digits - 1));
      return std::nearbyint(v / ulp) * ulp;
    };
    for (int ranks = 1; ranks <= 4; ++ranks) {
      for (double postscale : {1.0, 1.0 / 3.0}) {
        const int64_t n = 20000;
        std::vector<std::vector<uint16_t>> inputs(static_cast<size_t>(ranks), std::vector<uint16_t>(n));
        std::vector<double> sums(n, 0.0);
        for (int r = 0; r < ranks; ++r) {
          for (int64_t i = 0; i < n; ++i) {
            const uint64_t bits = rng();
            const double mantissa = 1.0 + std::ldexp(static_cast<double>(bits % (1u << mantissa_bits)), -mantissa_bits);
            const int exponent = static_cast<int>((bits >> 20) % 6) - 4;
            const double value = ((bits >> 40) & 1 ? -1 : 1) * std::ldexp(mantissa, exponent);
            const auto as_float = static_cast<float>(value);  // exact
            inputs[r][i] = f16 ? float_to_float16(as_float) : float_to_bfloat16(as_float);
            sums[i] += value;
          }
        }
        std::vector<const void*> pointers;
        for (const auto& input : inputs) pointers.push_back(input.data());
        std::vector<uint16_t> out(n);
        ASSERT_TRUE(reduce_ranks_in_order_to(ReducedOutput{out.data(), postscale / ranks}, pointers.data(), ranks, n,
                                             dtype, ReduceOp::kSum)
                        .ok());
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double expected = round_once(sums[i] * postscale / ranks);
          const double actual = f16 ? float16_to_float(out[i]) : bfloat16_to_float(out[i]);
          if (actual != expected && wrong++ < 3) {
            ADD_FAILURE() << dtype_name(dtype) << " ranks " << ranks << " postscale " << postscale << " element " << i
                          << ": " << actual << ", expected " << expected;
          }
        }
        EXPECT_EQ(wrong, 0) << dtype_name(dtype) << " ranks " << ranks << " postscale " << postscale;
      }
    }
  }
}

TEST(ShmKernels, StreamingCopyCopiesEveryByteAtEveryAlignmentAndLeavesTheRestAlone) {
  // Sizes around the 16-byte head and the 64-byte lines, and a large one;
  // every target and source offset within a 16-byte unit.
  std::vector<size_t> sizes;
  for (size_t n = 0; n <= 200; ++n) sizes.push_back(n);
  sizes.push_back((256 << 10) + 37);
  std::mt19937 random(7);
  for (size_t bytes : sizes) {
    std::vector<unsigned char> source(bytes + 16);
    for (auto& b : source) b = static_cast<unsigned char>(random());
    for (size_t to_offset = 0; to_offset < 16; ++to_offset) {
      for (size_t from_offset : {size_t{0}, size_t{3}, size_t{8}, size_t{15}}) {
        if (bytes > 1000 && from_offset != 3) continue;  // the large size: a few offsets suffice
        std::vector<unsigned char> target(bytes + 48, 0xA5);
        copy_streaming(target.data() + 16 + to_offset, source.data() + from_offset, bytes);
        streaming_stores_done();
        for (size_t i = 0; i < target.size(); ++i) {
          const bool copied = i >= 16 + to_offset && i < 16 + to_offset + bytes;
          const unsigned char expected = copied ? source[from_offset + i - 16 - to_offset] : 0xA5;
          ASSERT_EQ(target[i], expected) << "byte " << i << " of a " << bytes << "-byte copy to offset "
                                         << to_offset << " from offset " << from_offset;
        }
      }
    }
  }
}

}  // namespace
}  // namespace chorus
