// MpiBackend's scaled reductions (allreduce and reducescatter with a factor)
// apply the factor as the ranks' values are folded: the bits are those of
// the shared-memory kernel (reduce_ranks_in_order_to, checked on its own in
// shm_kernels_test) over every rank's input. float16/bfloat16 are rounded
// once, on 2 ranks too (where MPI's own op would round the sum before a
// scale); float32/float64 get the bits of a reduce then scale(). In place
// and not; reducescatter also with a skewed split, whose in-place block
// partly overlaps where the result goes.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ops/kernels/half.h"
#include "ops/kernels/ordered_reduce.h"
#include "support/mpi_backend_fixture.h"

namespace chorus {
namespace {

using Bytes = std::vector<unsigned char>;

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// `rank`'s input: full-precision values in [-1, 1) (sums depend on how they
// are rounded), products' factors of magnitude in [0.5, 2).
Bytes input_of(DataType dtype, ReduceOp op, int rank, uint64_t seed, int64_t count) {
  const size_t size = dtype_size(dtype);
  Bytes out(static_cast<size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t bits = mix(mix(seed * 131 + static_cast<uint64_t>(rank)) ^ static_cast<uint64_t>(i));
    const double unit = static_cast<double>(bits >> 11) * 0x1p-53;
    const double sign = (bits & 1) ? -1.0 : 1.0;
    const double real = op == ReduceOp::kProduct ? sign * (0.5 + 1.5 * unit) : 2.0 * unit - 1.0;
    unsigned char* at = out.data() + static_cast<size_t>(i) * size;
    if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
      const auto value = static_cast<float>(real);
      const uint16_t half = dtype == DataType::kFloat16 ? float_to_float16(value) : float_to_bfloat16(value);
      std::memcpy(at, &half, 2);
    } else if (dtype == DataType::kFloat32) {
      const auto value = static_cast<float>(real);
      std::memcpy(at, &value, 4);
    } else {
      std::memcpy(at, &real, 8);
    }
  }
  return out;
}

class MpiBackendScaledTest : public MpiBackendFixture {};

TEST_F(MpiBackendScaledTest, FoldsTheFactorLikeTheSharedMemoryKernel) {
  uint64_t seed = 0;
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    const size_t size = dtype_size(dtype);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
      for (double factor : {1.0 / size_, 1.0 / (3.0 * size_)}) {
        const int64_t total = 1001;
        ++seed;
        std::vector<Bytes> inputs;
        std::vector<const void*> pointers;
        for (int r = 0; r < size_; ++r) inputs.push_back(input_of(dtype, op, r, seed, total));
        for (const Bytes& input : inputs) pointers.push_back(input.data());
        Bytes expected(static_cast<size_t>(total) * size);
        ASSERT_TRUE(reduce_ranks_in_order_to(ReducedOutput{expected.data(), factor}, pointers.data(), size_, total,
                                             dtype, op)
                        .ok());
        const std::string what = std::string(dtype_name(dtype)) + " " + reduce_op_name(op) + " factor " +
                                 std::to_string(factor);
        for (bool in_place : {false, true}) {
          Bytes data = inputs[static_cast<size_t>(rank_)];
          Bytes output(data.size(), 0xa5);
          void* out = in_place ? data.data() : output.data();
          ASSERT_TRUE(backend_->allreduce(data.data(), out, total, dtype, op, factor)->wait().ok());
          EXPECT_EQ(0, std::memcmp(out, expected.data(), expected.size())) << "allreduce " << what;
          for (bool skewed : {false, true}) {
            std::vector<int64_t> counts(static_cast<size_t>(size_), total / size_);
            counts.back() += total % size_;
            if (skewed) {
              counts.assign(static_cast<size_t>(size_), 1);
              counts.back() = total - (size_ - 1);
            }
            int64_t offset = 0;
            for (int r = 0; r < rank_; ++r) offset += counts[static_cast<size_t>(r)];
            const int64_t mine = counts[static_cast<size_t>(rank_)];
            Bytes scattered = inputs[static_cast<size_t>(rank_)];
            Bytes block(static_cast<size_t>(mine) * size, 0xa5);
            void* target = in_place ? scattered.data() : block.data();
            ASSERT_TRUE(backend_->reducescatter(scattered.data(), target, counts, dtype, op, factor)->wait().ok());
            EXPECT_EQ(0, std::memcmp(target, expected.data() + static_cast<size_t>(offset) * size,
                                     static_cast<size_t>(mine) * size))
                << "reducescatter " << what << (skewed ? " skewed" : "") << (in_place ? " in place" : "");
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace chorus
