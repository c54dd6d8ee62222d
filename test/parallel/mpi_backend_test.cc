// MpiBackend on MPI_COMM_WORLD: every collective x dtype x reduce op x count.
// Inputs are a pure function of (rank, seed, element index), so each rank
// computes the expected result of all ranks' inputs locally. Integers and
// moved bytes compare exactly; floating reductions within the error of one
// rounding per reduction step. Argument checks and error handling are in
// mpi_backend_errors_test.cc.
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

TEST_F(MpiBackendTest, AllreduceEveryDtypeOpAndCount) {
  for (DataType dtype : kAllDtypes) {
    if (!reducible(dtype)) continue;
    for (ReduceOp op : kOps) {
      for (int64_t count : kCounts) {
        for (bool in_place : {false, true}) check_allreduce(backend_.get(), dtype, op, count, in_place);
      }
    }
  }
}

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

TEST_F(MpiBackendTest, AllgathervEveryDtypeAndCountPattern) {
  // Per-rank count patterns: the fixed counts, then uneven ones with zeros.
  std::vector<std::vector<int64_t>> patterns;
  for (int64_t count : kCounts) patterns.emplace_back(static_cast<size_t>(size_), count);
  std::vector<int64_t> odd;
  std::vector<int64_t> growing;
  for (int r = 0; r < size_; ++r) {
    odd.push_back(r % 2 == 0 ? 3 + 2 * r : 0);
    growing.push_back(999 + 2 * r);
  }
  patterns.push_back(odd);
  patterns.push_back(growing);
  for (DataType dtype : kAllDtypes) {
    const size_t size = dtype_size(dtype);
    for (size_t p = 0; p < patterns.size(); ++p) {
      const std::vector<int64_t>& counts = patterns[p];
      for (bool in_place : {false, true}) {
        const uint64_t seed = case_seed(dtype, static_cast<int>(p), 0, in_place);
        Bytes expected;
        for (int r = 0; r < size_; ++r) {
          const Bytes block = make_data(dtype, ReduceOp::kSum, r, seed, 0, counts[static_cast<size_t>(r)]);
          expected.insert(expected.end(), block.begin(), block.end());
        }
        Bytes input = make_data(dtype, ReduceOp::kSum, rank_, seed, 0, counts[static_cast<size_t>(rank_)]);
        Bytes output(expected.size(), 0xa5);
        const void* send = input.data();
        if (in_place) {  // this rank's block already sits at its offset in the output
          int64_t offset = 0;
          for (int r = 0; r < rank_; ++r) offset += counts[static_cast<size_t>(r)];
          std::copy(input.begin(), input.end(), output.begin() + offset * static_cast<int64_t>(size));
          send = output.data() + offset * static_cast<int64_t>(size);
        }
        const Status s = backend_->allgatherv(send, output.data(), counts, dtype)->wait();
        ASSERT_TRUE(s.ok()) << s.to_string();
        EXPECT_TRUE(output == expected) << "allgatherv " << dtype_name(dtype) << " pattern " << p
                                        << (in_place ? " in place" : "");
      }
    }
  }
}

TEST_F(MpiBackendTest, BroadcastFromEveryRootAndSize) {
  for (int64_t limit : {int64_t{INT_MAX}, int64_t{1000}, int64_t{7}}) {
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

TEST_F(MpiBackendTest, ExchangeCountsTransposes) {
  // Values beyond 32 bits check that counts travel as int64.
  auto count = [](int from, int to) { return (int64_t{1} << 40) + 1000 * from + to; };
  std::vector<int64_t> send;
  for (int r = 0; r < size_; ++r) send.push_back(count(rank_, r));
  std::vector<int64_t> recv;
  const Status s = backend_->exchange_counts(send, &recv);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_EQ(recv.size(), static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) EXPECT_EQ(recv[static_cast<size_t>(r)], count(r, rank_));
}

TEST_F(MpiBackendTest, AlltoallvEveryDtypeAndCountPattern) {
  // count(pattern, from, to): fixed counts, then uneven ones with zeros.
  const int kPatterns = 7;
  auto count = [&](int p, int from, int to) -> int64_t {
    if (p < 5) return kCounts[p];
    if (p == 5) return (from * 5 + to * 3) % 4 == 0 ? 0 : (from * 5 + to * 3) % 13;
    return 12345 / size_ + from - to;
  };
  // The block from rank `from` to rank `to` is from's data for a seed per `to`.
  auto block_seed = [](uint64_t seed, int to) { return mix(seed + static_cast<uint64_t>(to)); };
  for (DataType dtype : kAllDtypes) {
    for (int p = 0; p < kPatterns; ++p) {
      const uint64_t seed = case_seed(dtype, p, 0);
      std::vector<int64_t> send_counts;
      std::vector<int64_t> recv_counts;
      Bytes input;
      Bytes expected;
      for (int r = 0; r < size_; ++r) {
        send_counts.push_back(count(p, rank_, r));
        recv_counts.push_back(count(p, r, rank_));
        const Bytes out_block = make_data(dtype, ReduceOp::kSum, rank_, block_seed(seed, r), 0, send_counts.back());
        const Bytes in_block = make_data(dtype, ReduceOp::kSum, r, block_seed(seed, rank_), 0, recv_counts.back());
        input.insert(input.end(), out_block.begin(), out_block.end());
        expected.insert(expected.end(), in_block.begin(), in_block.end());
      }
      std::vector<int64_t> exchanged;
      ASSERT_TRUE(backend_->exchange_counts(send_counts, &exchanged).ok());
      EXPECT_EQ(exchanged, recv_counts);
      Bytes output(expected.size(), 0xa5);
      const Status s = backend_->alltoallv(input.data(), send_counts, output.data(), recv_counts, dtype)->wait();
      ASSERT_TRUE(s.ok()) << s.to_string();
      EXPECT_TRUE(output == expected) << "alltoallv " << dtype_name(dtype) << " pattern " << p;
    }
  }
}

TEST_F(MpiBackendTest, ReducescatterEveryDtypeOpAndCount) {
  for (DataType dtype : kAllDtypes) {
    if (!reducible(dtype)) continue;
    const size_t size = dtype_size(dtype);
    for (ReduceOp op : kOps) {
      for (int64_t total : kCounts) {
        for (int variant = 0; variant < 4; ++variant) {
          const bool skewed = variant >= 2;
          const bool in_place = variant % 2 == 1;
          // Even split (the first total % np ranks get one more), or skewed:
          // rank 0 gets nothing and the last rank the remainder.
          std::vector<int64_t> counts(static_cast<size_t>(size_));
          int64_t assigned = 0;
          for (int r = 0; r < size_; ++r) {
            int64_t c = total / size_ + (r < total % size_ ? 1 : 0);
            if (skewed) c = r == 0 ? 0 : r == size_ - 1 ? total - assigned : total / (2 * size_);
            counts[static_cast<size_t>(r)] = c;
            assigned += c;
          }
          int64_t offset = 0;
          for (int r = 0; r < rank_; ++r) offset += counts[static_cast<size_t>(r)];
          const int64_t mine = counts[static_cast<size_t>(rank_)];
          const uint64_t seed = case_seed(dtype, static_cast<int>(op), total, variant);
          Bytes input = make_data(dtype, op, rank_, seed, 0, total);
          Bytes output(static_cast<size_t>(mine) * size, 0xa5);
          void* out = output.data();
          if (in_place) out = input.data();
          const Status s = backend_->reducescatter(input.data(), out, counts, dtype, op, 1.0)->wait();
          ASSERT_TRUE(s.ok()) << s.to_string();
          expect_reduced(dtype, op, seed, size_, static_cast<unsigned char*>(out), offset, mine,
                         "reducescatter total " + std::to_string(total) + " variant " + std::to_string(variant));
        }
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
