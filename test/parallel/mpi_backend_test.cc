// MpiBackend on MPI_COMM_WORLD beyond the Backend contract (every backend's
// collectives x dtypes x ops x counts are in backend_contract_test.cc, its
// "mpi" row): allreduce and broadcast split counts above the backend's
// count limit, large allreduces take the ordered path, and a job of one rank
// reduces fused pieces where they lie. Inputs are a pure function of (rank,
// seed, element index), so each rank computes the expected result of all
// ranks' inputs locally. Integers and moved bytes compare exactly; floating
// reductions within the error of one rounding per reduction step. Argument
// checks and error handling are in mpi_backend_errors_test.cc.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/kernels/half.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "support/mpi_backend_fixture.h"

namespace chorus {
namespace {

using Bytes = std::vector<unsigned char>;

const int64_t kCounts[] = {0, 1, 7, 1000, 12345};

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
uint64_t random_bits(int rank, uint64_t seed, int64_t index) {
  return mix(mix(seed * 131 + static_cast<uint64_t>(rank)) ^ static_cast<uint64_t>(index));
}
uint64_t case_seed(DataType dtype, int a, int64_t b, int c = 0) {
  return mix((static_cast<uint64_t>(dtype) << 48) ^ (static_cast<uint64_t>(a) << 40) ^
             (static_cast<uint64_t>(b) << 8) ^ static_cast<uint64_t>(c));
}
bool is_integer(DataType dtype) { return !is_floating_point(dtype) && dtype != DataType::kBool; }

template <typename T>
void put(void* dst, T value) {
  std::memcpy(dst, &value, sizeof(T));
}
template <typename T>
T get(const void* src) {
  T value;
  std::memcpy(&value, src, sizeof(T));
  return value;
}

// One element for dtype from 64 random bits. Ranges keep int32/int64 sums and
// products of up to 4 ranks from overflowing (MPI's signed arithmetic would
// be undefined); 8- and 16-bit types wrap (over their whole range, where Open
// MPI's own vector sums would saturate), which both sides compute modulo
// 2^8 or 2^16.
// Product inputs have magnitude in [0.5, 2) so floats neither vanish nor blow up.
void write_element(DataType dtype, ReduceOp op, uint64_t bits, void* dst) {
  const double unit = static_cast<double>(bits >> 11) * 0x1p-53;  // [0, 1)
  const double sign = (bits & 1) ? -1.0 : 1.0;
  const double real = op == ReduceOp::kProduct ? sign * (0.5 + 1.5 * unit) : 2.0 * unit - 1.0;
  switch (dtype) {
    case DataType::kUInt8: put(dst, static_cast<uint8_t>(bits >> 3)); break;
    case DataType::kInt8: put(dst, static_cast<int8_t>(bits >> 3)); break;
    case DataType::kInt16: put(dst, static_cast<int16_t>(bits >> 3)); break;
    case DataType::kUInt16: put(dst, static_cast<uint16_t>(bits >> 3)); break;
    case DataType::kInt32: put(dst, static_cast<int32_t>((bits >> 3) % 201) - 100); break;
    case DataType::kInt64: put(dst, static_cast<int64_t>((bits >> 3) % 20001) - 10000); break;
    case DataType::kFloat16: put(dst, float_to_float16(static_cast<float>(real))); break;
    case DataType::kBFloat16: put(dst, float_to_bfloat16(static_cast<float>(real))); break;
    case DataType::kFloat32: put(dst, static_cast<float>(real)); break;
    case DataType::kFloat64: put(dst, real); break;
    case DataType::kBool: put(dst, static_cast<unsigned char>((bits >> 5) & 1)); break;
  }
}

double read_real(DataType dtype, const void* src) {
  switch (dtype) {
    case DataType::kFloat16: return float16_to_float(get<uint16_t>(src));
    case DataType::kBFloat16: return bfloat16_to_float(get<uint16_t>(src));
    case DataType::kFloat32: return get<float>(src);
    case DataType::kFloat64: return get<double>(src);
    default: return 0;
  }
}

// Integers in int64, `value` truncated to dtype's width like a C cast.
int64_t to_width(DataType dtype, uint64_t value) {
  switch (dtype) {
    case DataType::kUInt8: return static_cast<uint8_t>(value);
    case DataType::kInt8: return static_cast<int8_t>(value);
    case DataType::kInt16: return static_cast<int16_t>(value);
    case DataType::kUInt16: return static_cast<uint16_t>(value);
    case DataType::kInt32: return static_cast<int32_t>(value);
    default: return static_cast<int64_t>(value);
  }
}
int64_t read_int(DataType dtype, const void* src) {
  uint64_t raw = 0;  // little-endian: the element's bytes are the low bytes
  std::memcpy(&raw, src, dtype_size(dtype));
  return to_width(dtype, raw);
}

// Elements [begin, begin + count) of `rank`'s data for this seed.
Bytes make_data(DataType dtype, ReduceOp op, int rank, uint64_t seed, int64_t begin, int64_t count) {
  const size_t size = dtype_size(dtype);
  Bytes out(static_cast<size_t>(count) * size);
  for (int64_t k = 0; k < count; ++k) {
    write_element(dtype, op, random_bits(rank, seed, begin + k), out.data() + static_cast<size_t>(k) * size);
  }
  return out;
}

double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return 0x1p-11;
    case DataType::kBFloat16: return 0x1p-8;
    case DataType::kFloat32: return 0x1p-24;
    default: return 0x1p-53;
  }
}

// Checks got[k] == the reduction over all ranks of element begin + k.
void expect_reduced(DataType dtype, ReduceOp op, uint64_t seed, int np, const unsigned char* got,
                    int64_t begin, int64_t count, const std::string& what) {
  const size_t size = dtype_size(dtype);
  unsigned char element[8];
  int64_t failures = 0;
  std::string first;
  for (int64_t k = 0; k < count; ++k) {
    const unsigned char* actual = got + static_cast<size_t>(k) * size;
    if (is_integer(dtype)) {
      int64_t acc = 0;
      for (int r = 0; r < np; ++r) {
        write_element(dtype, op, random_bits(r, seed, begin + k), element);
        const int64_t v = read_int(dtype, element);
        const auto ua = static_cast<uint64_t>(acc);
        const auto uv = static_cast<uint64_t>(v);
        if (r == 0) acc = v;
        else if (op == ReduceOp::kSum) acc = to_width(dtype, ua + uv);
        else if (op == ReduceOp::kProduct) acc = to_width(dtype, ua * uv);
        else acc = op == ReduceOp::kMin ? std::min(acc, v) : std::max(acc, v);
      }
      if (read_int(dtype, actual) == acc) continue;
      if (failures++ == 0) first = std::to_string(read_int(dtype, actual)) + " != " + std::to_string(acc);
    } else {
      double acc = 0;
      double magnitude = 0;
      for (int r = 0; r < np; ++r) {
        write_element(dtype, op, random_bits(r, seed, begin + k), element);
        const double v = read_real(dtype, element);
        if (r == 0) acc = v;
        else if (op == ReduceOp::kSum) acc += v;
        else if (op == ReduceOp::kProduct) acc *= v;
        else acc = op == ReduceOp::kMin ? std::min(acc, v) : std::max(acc, v);
        magnitude += std::fabs(v);
      }
      // Each of the np - 1 steps rounds once (relative u); min/max are exact.
      double tolerance = 0;
      if (op == ReduceOp::kSum) tolerance = 2.0 * np * unit_roundoff(dtype) * magnitude;
      if (op == ReduceOp::kProduct) tolerance = 2.0 * np * unit_roundoff(dtype) * std::fabs(acc);
      const double value = read_real(dtype, actual);
      if (std::fabs(value - acc) <= tolerance) continue;
      if (failures++ == 0) first = std::to_string(value) + " != " + std::to_string(acc);
    }
    if (failures == 1) first += " at element " + std::to_string(begin + k);
  }
  EXPECT_EQ(failures, 0) << what << ": " << dtype_name(dtype) << " " << reduce_op_name(op) << ", first: " << first;
}

class MpiBackendTest : public MpiBackendFixture {
 protected:

  // allreduce of `count` elements (in place or not) on `backend`, checked.
  void check_allreduce(MpiBackend* backend, DataType dtype, ReduceOp op, int64_t count, bool in_place) {
    const uint64_t seed = case_seed(dtype, static_cast<int>(op), count, in_place);
    Bytes input = make_data(dtype, op, rank_, seed, 0, count);
    Bytes output(input.size(), 0xa5);
    if (in_place) output = input;
    const void* send = in_place ? output.data() : input.data();
    const Status s = backend->allreduce(send, output.data(), count, dtype, op, 1.0)->wait();
    ASSERT_TRUE(s.ok()) << s.to_string();
    expect_reduced(dtype, op, seed, size_, output.data(), 0, count,
                   "allreduce count " + std::to_string(count) + (in_place ? " in place" : ""));
  }

};

TEST_F(MpiBackendTest, AllreduceSplitsCountsAboveTheLimit) {
  auto backend = limited(1000);
  for (DataType dtype : kAllDtypes) {
    if (!reducible(dtype)) continue;
    for (ReduceOp op : kOps) check_allreduce(backend.get(), dtype, op, 2001, op == ReduceOp::kMax);
    check_allreduce(backend.get(), dtype, ReduceOp::kSum, 12345, true);
  }
  check_allreduce(limited(1).get(), DataType::kFloat16, ReduceOp::kSum, 7, false);
}

// From kOrderedReductionMinBytes on, allreduce takes the ordered path
// (reduce-scatter by MPI_Alltoallv, fold, MPI_Allgatherv) on any number of
// ranks; its per-rank blocks are uneven when the count does not divide.
TEST_F(MpiBackendTest, LargeAllreducesTakeTheOrderedPath) {
  for (DataType dtype : {DataType::kFloat32, DataType::kInt32, DataType::kFloat64}) {
    const int64_t count = kOrderedReductionMinBytes / static_cast<int64_t>(dtype_size(dtype)) + 7;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      for (bool in_place : {false, true}) check_allreduce(backend_.get(), dtype, op, count, in_place);
    }
  }
}

// Broadcasts above the count limit go in chunks of at most the limit.
TEST_F(MpiBackendTest, BroadcastSplitsCountsAboveTheLimit) {
  for (int64_t limit : {int64_t{1000}, int64_t{7}}) {
    auto backend = limited(limit);
    for (int root = 0; root < size_; ++root) {
      for (int64_t bytes : kCounts) {
        if (limit == 7 && bytes > 1000) continue;  // 1764 calls would only cost time
        const uint64_t seed = case_seed(DataType::kUInt8, root, bytes, static_cast<int>(limit));
        const Bytes expected = make_data(DataType::kUInt8, ReduceOp::kSum, root, seed, 0, bytes);
        Bytes buffer = rank_ == root ? expected : Bytes(expected.size(), 0xa5);
        const Status s = backend->broadcast(buffer.data(), bytes, root)->wait();
        ASSERT_TRUE(s.ok()) << s.to_string();
        EXPECT_TRUE(buffer == expected) << "root " << root << " bytes " << bytes << " limit " << limit;
      }
    }
  }
}

// A job of one rank reduces a fused message where it lies: each piece's
// result is its input times the factor. MPI_COMM_SELF stands for such a job
// on every rank; the world's backend (2+ ranks) leaves fusion to the executor.
TEST_F(MpiBackendTest, SingleRankJobAllreducesFusedPiecesWhereTheyLie) {
  EXPECT_EQ(backend_->fuses_in_place(1000, DataType::kFloat32, ReduceOp::kSum), size_ == 1);
  MpiBackend self(MPI_COMM_SELF, &types_);
  ASSERT_TRUE(self.fuses_in_place(1000, DataType::kFloat32, ReduceOp::kSum));
  for (double factor : {1.0, 0.25}) {
    std::vector<float> in_place = {1, -2, 3};
    const std::vector<float> source = {10, 20, 30, 40, 50};
    std::vector<float> target(source.size(), -1.0f);
    std::vector<AllreducePiece> pieces = {{in_place.data(), in_place.data(), 3},
                                          {source.data(), target.data(), 5},
                                          {nullptr, nullptr, 0}};
    const Status s = self.allreduce_pieces(pieces, DataType::kFloat32, ReduceOp::kSum, factor)->wait();
    ASSERT_TRUE(s.ok()) << s.to_string();
    const auto f = static_cast<float>(factor);  // 1 and 1/4 scale exactly
    EXPECT_EQ(in_place, (std::vector<float>{1 * f, -2 * f, 3 * f})) << "factor " << factor;
    EXPECT_EQ(target, (std::vector<float>{10 * f, 20 * f, 30 * f, 40 * f, 50 * f})) << "factor " << factor;
    EXPECT_EQ(source, (std::vector<float>{10, 20, 30, 40, 50})) << "the input of an out-of-place piece is read only";
  }
  std::vector<float> data(4, 1.0f);
  const Status missing = self.allreduce_pieces({{data.data(), nullptr, 4}}, DataType::kFloat32, ReduceOp::kSum, 1.0)->wait();
  EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument) << missing.to_string();
}

}  // namespace
}  // namespace chorus
