// MpiBackend::adasum (ops/mpi/adasum.h) on MPI_COMM_WORLD, below the
// runtime: a fused message of tensors of different sizes (empty ones, ones
// shorter than the number of ranks) against the paper's formula per tensor
// (support/adasum_reference.h); transfers split into pieces of at most 2 or
// 3 elements give the same bits as whole ones (the pieces only change how
// the halves travel); at np 3 every rank refuses, naming the size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/kernels/half.h"
#include "support/adasum_reference.h"
#include "support/mpi_backend_fixture.h"

namespace chorus {
namespace {

const std::vector<int64_t> kCounts = {5, 0, 17, 1, 2, 64};

double value(int rank, int64_t i) {
  // Distinct, exactly representable in bfloat16: k/8 for k in [-16, 15].
  return static_cast<double>(static_cast<int64_t>((i * 7 + rank * 13 + (i * rank) % 5) % 32) - 16) / 8.0;
}

std::vector<unsigned char> message(DataType dtype, int rank, int64_t total) {
  std::vector<unsigned char> out(static_cast<size_t>(total) * dtype_size(dtype));
  for (int64_t i = 0; i < total; ++i) {
    const auto v = static_cast<float>(value(rank, i));
    if (dtype == DataType::kBFloat16) {
      const uint16_t half = float_to_bfloat16(v);
      std::memcpy(out.data() + 2 * i, &half, 2);
    } else {
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  }
  return out;
}

double element(DataType dtype, const std::vector<unsigned char>& bytes, int64_t i) {
  if (dtype == DataType::kBFloat16) {
    uint16_t half;
    std::memcpy(&half, bytes.data() + 2 * i, 2);
    return bfloat16_to_float(half);
  }
  float v;
  std::memcpy(&v, bytes.data() + 4 * i, 4);
  return v;
}

class MpiAdasumTest : public MpiBackendFixture {};

TEST_F(MpiAdasumTest, EachTensorByItsOwnDotProductsWithAndWithoutSplitTransfers) {
  int64_t total = 0;
  for (int64_t n : kCounts) total += n;
  if ((size_ & (size_ - 1)) != 0) {
    std::vector<unsigned char> data = message(DataType::kFloat32, rank_, total);
    const Status status = backend_->adasum(data.data(), kCounts, DataType::kFloat32, 1.0)->wait();
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), "adasum: needs a power-of-two number of ranks, but the communicator has " +
                                    std::to_string(size_));
    return;
  }
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16}) {
    std::vector<unsigned char> whole = message(dtype, rank_, total);
    ASSERT_TRUE(backend_->adasum(whole.data(), kCounts, dtype, 2.0)->wait().ok());
    for (int64_t limit : {2, 3}) {
      std::vector<unsigned char> pieces = message(dtype, rank_, total);
      ASSERT_TRUE(limited(limit)->adasum(pieces.data(), kCounts, dtype, 2.0)->wait().ok());
      EXPECT_EQ(pieces, whole) << dtype_name(dtype) << ", pieces of " << limit;
    }
    int64_t offset = 0;
    for (int64_t n : kCounts) {
      std::vector<std::vector<double>> grads(static_cast<size_t>(size_));
      for (int r = 0; r < size_; ++r) {
        for (int64_t i = 0; i < n; ++i) grads[r].push_back(value(r, offset + i));
      }
      const std::vector<double> expected = chorus_test::adasum_reference(grads);
      // Twice the first-order bound of float32 arithmetic, times the factor
      // (a power of two), then one rounding to the dtype.
      const double bound = 2.0 * 2.0 * chorus_test::adasum_tolerance(grads, 0x1p-24);
      const double rounding = dtype == DataType::kBFloat16 ? 0x1p-8 : 0x1p-24;
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_NEAR(element(dtype, whole, offset + i), 2.0 * expected[i], bound + rounding * std::abs(2.0 * expected[i]))
            << dtype_name(dtype) << " tensor at " << offset << " element " << i;
      }
      offset += n;
    }
  }
}

TEST_F(MpiAdasumTest, RefusesIntegers) {
  std::vector<int32_t> data(4, 1);
  const Status status = backend_->adasum(data.data(), {4}, DataType::kInt32, 1.0)->wait();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "adasum: dtype 'int32' cannot be combined by Adasum; expected float16, bfloat16, float32 or float64");
}

}  // namespace
}  // namespace chorus
