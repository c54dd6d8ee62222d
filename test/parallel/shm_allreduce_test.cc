// ShmAllreduce over ShmGroup on MPI_COMM_WORLD (every rank of a ctest job is
// on this host): every dtype x reduce op x count, in place and not, with
// chunk sizes small enough that counts split into many chunks and unevenly
// among the ranks. The reference folds every rank's input in rank order in
// the test's own scalar code (inputs are a pure function of rank, seed and
// index), and results must match it bit for bit: the shared-memory path
// promises a fixed rank order. Also: the segment's name is gone once set up,
// and the MPI backend gives the very same bits, scaled or not (so a tensor
// does not change when fusion moves it across the size threshold between
// the paths).
#include <dirent.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/kernels/half.h"
#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "ops/shm/shm_allreduce.h"
#include "ops/shm/shm_group.h"
#include "ops/mpi/mpi_setup_channel.h"

namespace chorus {
namespace {

using Bytes = std::vector<unsigned char>;

const DataType kDtypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kUInt16,
                            DataType::kInt32,   DataType::kInt64,   DataType::kFloat16,  DataType::kBFloat16,
                            DataType::kFloat32, DataType::kFloat64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
void put(unsigned char* dst, T value) {
  std::memcpy(dst, &value, sizeof(T));
}
template <typename T>
T get(const unsigned char* src) {
  T value;
  std::memcpy(&value, src, sizeof(T));
  return value;
}

// Element `index` of `rank`'s input. Floats at full precision (sums depend
// on the order); products near 1 in magnitude so they neither vanish nor
// overflow; integers over their whole range (sums and products wrap).
void write_element(DataType dtype, ReduceOp op, int rank, uint64_t seed, int64_t index, unsigned char* dst) {
  const uint64_t bits = mix(mix(seed * 131 + static_cast<uint64_t>(rank)) ^ static_cast<uint64_t>(index));
  const double unit = static_cast<double>(bits >> 11) * 0x1p-53;
  const double sign = (bits & 1) ? -1.0 : 1.0;
  const double real = op == ReduceOp::kProduct ? sign * (0.5 + 1.5 * unit) : 2.0 * unit - 1.0;
  switch (dtype) {
    case DataType::kUInt8: put(dst, static_cast<uint8_t>(bits >> 7)); break;
    case DataType::kInt8: put(dst, static_cast<int8_t>(bits >> 7)); break;
    case DataType::kInt16: put(dst, static_cast<int16_t>(bits >> 7)); break;
    case DataType::kUInt16: put(dst, static_cast<uint16_t>(bits >> 7)); break;
    case DataType::kInt32: put(dst, static_cast<int32_t>(bits >> 7)); break;
    case DataType::kInt64: put(dst, static_cast<int64_t>(bits >> 3)); break;
    case DataType::kFloat16: put(dst, float_to_float16(static_cast<float>(real))); break;
    case DataType::kBFloat16: put(dst, float_to_bfloat16(static_cast<float>(real))); break;
    case DataType::kFloat32: put(dst, static_cast<float>(real)); break;
    case DataType::kFloat64: put(dst, real); break;
    case DataType::kBool: break;
  }
}

Bytes make_input(DataType dtype, ReduceOp op, int rank, uint64_t seed, int64_t count) {
  const size_t size = dtype_size(dtype);
  Bytes out(static_cast<size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i) write_element(dtype, op, rank, seed, i, out.data() + i * size);
  return out;
}

template <typename T>
T fold_step(T acc, T v, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return acc + v;
    case ReduceOp::kProduct: return acc * v;
    case ReduceOp::kMin: return v < acc ? v : acc;
    default: return acc < v ? v : acc;
  }
}

// Integers: wrapping arithmetic on an unsigned type (unsigned int for the
// narrow ones, which would otherwise be promoted to int and overflow).
template <typename T>
void fold_integer(unsigned char* acc, const unsigned char* v, ReduceOp op) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  const T a = get<T>(acc);
  const T b = get<T>(v);
  T r;
  if (op == ReduceOp::kSum) r = static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  else if (op == ReduceOp::kProduct) r = static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  else r = fold_step(a, b, op);
  put(acc, r);
}

// The expected result: every element folded over ranks 0, 1, ... in order;
// float16/bfloat16 accumulate in float and round once at the end.
Bytes reference(DataType dtype, ReduceOp op, int ranks, uint64_t seed, int64_t count) {
  const size_t size = dtype_size(dtype);
  std::vector<Bytes> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(make_input(dtype, op, r, seed, count));
  Bytes out = inputs[0];
  for (int64_t i = 0; i < count; ++i) {
    unsigned char* acc = out.data() + i * size;
    float wide = 0;
    for (int r = 0; r < ranks; ++r) {
      const unsigned char* v = inputs[static_cast<size_t>(r)].data() + i * size;
      switch (dtype) {
        case DataType::kUInt8: if (r) fold_integer<uint8_t>(acc, v, op); break;
        case DataType::kInt8: if (r) fold_integer<int8_t>(acc, v, op); break;
        case DataType::kInt16: if (r) fold_integer<int16_t>(acc, v, op); break;
        case DataType::kUInt16: if (r) fold_integer<uint16_t>(acc, v, op); break;
        case DataType::kInt32: if (r) fold_integer<int32_t>(acc, v, op); break;
        case DataType::kInt64: if (r) fold_integer<int64_t>(acc, v, op); break;
        case DataType::kFloat32: if (r) put(acc, fold_step(get<float>(acc), get<float>(v), op)); break;
        case DataType::kFloat64: if (r) put(acc, fold_step(get<double>(acc), get<double>(v), op)); break;
        case DataType::kFloat16: {
          const float x = float16_to_float(get<uint16_t>(v));
          wide = r ? fold_step(wide, x, op) : x;
          if (r == ranks - 1) put(acc, float_to_float16(wide));
          break;
        }
        case DataType::kBFloat16: {
          const float x = bfloat16_to_float(get<uint16_t>(v));
          wide = r ? fold_step(wide, x, op) : x;
          if (r == ranks - 1) put(acc, float_to_bfloat16(wide));
          break;
        }
        case DataType::kBool: break;
      }
    }
  }
  return out;
}

::testing::AssertionResult same_bits(const Bytes& actual, const Bytes& expected, size_t element_size) {
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << "sizes differ";
  int64_t differing = 0;
  int64_t first = -1;
  for (size_t i = 0; i < actual.size(); i += element_size) {
    if (std::memcmp(actual.data() + i, expected.data() + i, element_size) != 0) {
      if (first < 0) first = static_cast<int64_t>(i / element_size);
      ++differing;
    }
  }
  if (differing == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << differing << " of " << actual.size() / element_size
                                       << " elements differ, the first at index " << first;
}

constexpr std::chrono::milliseconds kTimeout{60000};

class ShmAllreduceTest : public ::testing::Test {
 protected:
  // One group per chunk size (an instance per group, see shm_allreduce.h):
  // 128 bytes (one cache line per rank share at most), 1 KiB, and the
  // default used in production.
  static constexpr int64_t kChunks[] = {128, 1024, ShmAllreduceOptions{}.chunk_bytes};
  static constexpr int kGroups = 3;

  static void SetUpTestSuite() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MpiSetupChannel world(MPI_COMM_WORLD);
    for (int g = 0; g < kGroups; ++g) {
      const Status status =
          ShmGroup::create(world, ShmAllreduce::data_bytes(size_, kChunks[g]), kTimeout, &groups_[g]);
      ASSERT_TRUE(status.ok()) << status.to_string();
      algorithms_[g] = std::make_unique<ShmAllreduce>(groups_[g].get(), ShmAllreduceOptions{kChunks[g]});
    }
  }
  static void TearDownTestSuite() {
    for (int g = 0; g < kGroups; ++g) {
      algorithms_[g].reset();
      groups_[g].reset();
    }
  }

  void check(int group, DataType dtype, ReduceOp op, int64_t count, bool in_place, uint64_t seed) {
    const size_t esize = dtype_size(dtype);
    const Bytes input = make_input(dtype, op, rank_, seed, count);
    Bytes output(input.size(), 0xa5);
    if (in_place) output = input;
    const Status status =
        algorithms_[group]->allreduce(in_place ? output.data() : input.data(), output.data(), count, dtype, op);
    ASSERT_TRUE(status.ok()) << status.to_string();
    EXPECT_TRUE(same_bits(output, reference(dtype, op, size_, seed, count), esize))
        << dtype_name(dtype) << " " << reduce_op_name(op) << " count " << count << " chunk "
        << kChunks[group] << (in_place ? " in place" : "");
    if (!in_place) {
      EXPECT_EQ(input, make_input(dtype, op, rank_, seed, count)) << "the input was modified";
    }
  }

  static int rank_;
  static int size_;
  static std::unique_ptr<ShmGroup> groups_[kGroups];
  static std::unique_ptr<ShmAllreduce> algorithms_[kGroups];
};

int ShmAllreduceTest::rank_ = 0;
int ShmAllreduceTest::size_ = 1;
std::unique_ptr<ShmGroup> ShmAllreduceTest::groups_[kGroups];
std::unique_ptr<ShmAllreduce> ShmAllreduceTest::algorithms_[kGroups];

TEST_F(ShmAllreduceTest, EveryDtypeOpAndCountMatchesTheRankOrderReference) {
  // 0 and 1 element; fewer elements than ranks' shares; one line more or
  // less than a chunk; counts that leave a partial last chunk.
  const int64_t counts[] = {0, 1, 3, 63, 65, 1000, 2347};
  uint64_t seed = 1;
  for (DataType dtype : kDtypes) {
    for (ReduceOp op : kOps) {
      for (int64_t count : counts) {
        for (bool in_place : {false, true}) check(1, dtype, op, count, in_place, ++seed);
      }
    }
  }
}

TEST_F(ShmAllreduceTest, SmallestChunksSplitAtCacheLines) {
  for (DataType dtype : {DataType::kUInt8, DataType::kFloat16, DataType::kFloat32, DataType::kFloat64}) {
    for (int64_t count : {int64_t{17}, int64_t{129}, int64_t{515}}) check(0, dtype, ReduceOp::kSum, count, false, 100 + count);
  }
}

TEST_F(ShmAllreduceTest, LargeMessagesStreamThroughTheDefaultChunks) {
  // 1 MiB + 12 bytes of float32: 5 chunks, the last one partial.
  check(2, DataType::kFloat32, ReduceOp::kSum, (1 << 18) + 3, true, 7);
  check(2, DataType::kBFloat16, ReduceOp::kSum, (1 << 18) + 5, false, 8);
  check(2, DataType::kInt64, ReduceOp::kMax, (1 << 15) + 1, false, 9);
}

// Messages of up to one_shot_bytes (here the whole chunk) take one stage,
// larger ones the chunked path: calls of both kinds interleave in each group.
TEST_F(ShmAllreduceTest, ManyConsecutiveCallsStayInStep) {
  for (int call = 0; call < 150; ++call) {
    const DataType dtype = kDtypes[call % (sizeof(kDtypes) / sizeof(kDtypes[0]))];
    const ReduceOp op = kOps[call % 4];
    check(call % 2, dtype, op, (call * 37) % 300, call % 3 == 0, 1000 + static_cast<uint64_t>(call));
  }
}

// A fused message reduced where its tensors lie: pieces of uneven sizes
// (empty ones too), in place and not, whose boundaries fall anywhere in the
// chunks and shares. Each piece must hold its slice of the reference of the
// concatenation, and the share step must see every element exactly once.
TEST_F(ShmAllreduceTest, PiecesOfAFusedMessageMatchTheirSlicesOfTheReference) {
  const std::vector<int64_t> sizes = {5, 0, 1, 64, 0, 33, 1000, 7, 129, 2, 0};
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  uint64_t seed = 9000;
  for (int group : {0, 1, 2}) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16, DataType::kInt32}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        const size_t esize = dtype_size(dtype);
        const Bytes whole = make_input(dtype, op, rank_, ++seed, total);
        std::vector<Bytes> inputs, outputs;
        std::vector<AllreducePiece> pieces;
        int64_t at = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
          inputs.emplace_back(whole.begin() + at * esize, whole.begin() + (at + sizes[i]) * esize);
          outputs.emplace_back(inputs.back().size(), 0xa5);
          at += sizes[i];
        }
        for (size_t i = 0; i < sizes.size(); ++i) {
          const bool in_place = i % 2 == 1;
          pieces.push_back({inputs[i].data(), in_place ? inputs[i].data() : outputs[i].data(), sizes[i]});
        }
        int64_t stepped = 0;
        const Status status = algorithms_[group]->allreduce(
            pieces, dtype, op, [&](void*, int64_t elements) { stepped += elements; return Status::OK(); });
        ASSERT_TRUE(status.ok()) << status.to_string();
        const Bytes expected = reference(dtype, op, size_, seed, total);
        at = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
          const Bytes& result = i % 2 == 1 ? inputs[i] : outputs[i];
          const Bytes slice(expected.begin() + at * esize, expected.begin() + (at + sizes[i]) * esize);
          EXPECT_TRUE(same_bits(result, slice, esize))
              << "piece " << i << " of " << dtype_name(dtype) << " " << reduce_op_name(op) << " chunk "
              << kChunks[group];
          at += sizes[i];
        }
        int64_t all_stepped = 0;
        MPI_Allreduce(&stepped, &all_stepped, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        EXPECT_EQ(all_stepped, total) << "the share step must visit every element once, on one rank";
      }
    }
  }
}

// The executor picks the path by message size, so a tensor may go through
// MPI alone and through shared memory when fused: both must give the same
// bits, for every dtype and op, scaled (an average, a postscale) or not.
// float16 and bfloat16 sums and products fold in float32 and round once,
// after the factor, on both paths.
TEST_F(ShmAllreduceTest, SameBitsAsTheMpiBackend) {
  MpiTypes types;
  ASSERT_TRUE(types.create().ok());
  {
    MpiBackend mpi(MPI_COMM_WORLD, &types);
    uint64_t seed = 5000;
    for (DataType dtype : kDtypes) {
      for (ReduceOp op : kOps) {
        const std::vector<double> factors =
            is_floating_point(dtype) ? std::vector<double>{1.0, 1.0 / size_, 0.1 / size_} : std::vector<double>{1.0};
        for (double factor : factors) {
          // One stage (4 KiB), chunked, and (for float32) above the 4 MiB
          // from which MPI takes its ordered path on any number of ranks.
          const bool wide = dtype == DataType::kFloat32 && op == ReduceOp::kSum && factor == 1.0;
          for (int64_t bytes : {int64_t{4096}, int64_t{40000}, wide ? int64_t{(4 << 20) + 64} : int64_t{0}}) {
            if (bytes == 0) continue;
            const int64_t count = bytes / static_cast<int64_t>(dtype_size(dtype));
            const Bytes input = make_input(dtype, op, rank_, ++seed, count);
            Bytes via_shm(input.size());
            Bytes via_mpi(input.size());
            ASSERT_TRUE(
                algorithms_[2]->allreduce(input.data(), via_shm.data(), count, dtype, op, nullptr, factor).ok());
            ASSERT_TRUE(mpi.allreduce(input.data(), via_mpi.data(), count, dtype, op, factor)->wait().ok());
            EXPECT_TRUE(same_bits(via_shm, via_mpi, dtype_size(dtype)))
                << dtype_name(dtype) << " " << reduce_op_name(op) << " factor " << factor << " " << bytes
                << " bytes";
          }
        }
      }
    }
  }
  types.destroy();
}

TEST_F(ShmAllreduceTest, NoSegmentNameIsLeftInDevShm) {
  int creator = getpid();
  MPI_Bcast(&creator, 1, MPI_INT, 0, MPI_COMM_WORLD);  // rank 0 created the segments
  const std::string prefix = std::string(kShmSegmentPrefix) + std::to_string(creator) + ".";
  DIR* dir = opendir("/dev/shm");
  ASSERT_NE(dir, nullptr);
  std::vector<std::string> left;
  while (const dirent* entry = readdir(dir)) {
    if (std::string(entry->d_name).rfind(prefix, 0) == 0) left.push_back(entry->d_name);
  }
  closedir(dir);
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

TEST_F(ShmAllreduceTest, InvalidArgumentsAreRefusedWithoutTouchingPeers) {
  float x = 1;
  Status s = algorithms_[1]->allreduce(&x, &x, 1, DataType::kFloat32, ReduceOp::kAverage);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("average"), std::string::npos) << s.message();
  s = algorithms_[1]->allreduce(&x, &x, 1, DataType::kBool, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bool"), std::string::npos) << s.message();
  s = algorithms_[1]->allreduce(nullptr, &x, 1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = algorithms_[1]->allreduce(&x, &x, -1, DataType::kFloat32, ReduceOp::kSum);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // The group is still in step afterwards.
  check(1, DataType::kInt32, ReduceOp::kSum, 100, false, 77);
}

}  // namespace
}  // namespace chorus
