// Kernels of the shared-memory allreduce: the branch-free float16
// conversions (widen_float16, narrow_to_float16) against the scalar ones for
// every half and a spread of floats, and reduce_ranks_in_order against a
// pairwise fold in rank order, including output aliasing an input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/kernels/half.h"
#include "ops/kernels/ordered_reduce.h"
#include "ops/kernels/reduce.h"

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
}

}  // namespace
}  // namespace chorus
