// Independent references for the parallel tests. Every rank can regenerate
// every other rank's input from (rank, tensor index, seed), so each rank
// computes the expected result of a collective locally, without Chorus or
// MPI collectives: a bug in the runtime cannot also hide in the reference.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "chorus/types.h"

namespace chorus {
// Lets GoogleTest print "float16" instead of "1-byte object <04>" for the
// dtype parameter of failed tests (found by argument-dependent lookup).
inline void PrintTo(DataType dtype, std::ostream* out) { *out << dtype_name(dtype); }
}  // namespace chorus

namespace chorus_test {

using chorus::DataType;
using chorus::ReduceOp;
using chorus::Shape;

// The 10 dtypes that reductions support, and all 11 (with bool) for the
// collectives that only move data.
const std::vector<DataType>& numeric_dtypes();
const std::vector<DataType>& all_dtypes();
const std::vector<ReduceOp>& all_reduce_ops();

// Which values an input holds. Chosen so that results stay exact where the
// test needs exactness and no integer type overflows at up to 4 ranks.
enum class Values {
  // Integers: int8 [-20, 20], uint8 [0, 40], uint16 [0, 2000],
  // int16/int32/int64 [-1000, 1000].
  // Floats: multiples of 1/8 in [-4, 4]: exact in float16 and bfloat16 and
  // their sums are exact in any order, so only scaling and averaging round
  // and the tolerance measures just those roundings.
  kSmall,
  // Product-safe: integers in {-2, -1, 1, 2} (uint8/uint16 {1, 2, 3}), floats in
  // {+-0.5, +-1, +-1.5, +-2}; a product over 4 ranks stays exact.
  kProduct,
  // Floats uniform in [-1, 1) at full precision (rounded to the dtype), so
  // the result depends on the order of the additions; integers as kSmall.
  kRandom,
};

// An owning, typed buffer; tensor() gives the non-owning view Chorus takes.
class Buffer {
 public:
  Buffer() = default;
  Buffer(DataType dtype, Shape shape);

  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t elements() const { return chorus::num_elements(shape_); }
  size_t bytes() const { return bytes_; }
  // Never null, even for 0 elements: a null pointer with 0 elements is valid
  // input, but tests of empty tensors should not depend on that.
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }
  chorus::Tensor tensor() { return chorus::Tensor(data(), dtype_, shape_); }

  // Element access through double: exact for every value the tests use
  // (integers far below 2^53, and every float16/bfloat16/float32 value).
  double get(int64_t i) const;
  void set(int64_t i, double value);  // rounds to nearest for float16/bfloat16

 private:
  DataType dtype_ = DataType::kFloat32;
  Shape shape_;
  size_t bytes_ = 0;
  // uint64_t words keep every dtype aligned; at least one word so that
  // data() is never null.
  std::vector<uint64_t> storage_;
};

// Deterministic input of `rank` for tensor `index`; the same arguments give
// the same bytes on every rank.
Buffer make_input(DataType dtype, const Shape& shape, int rank, int index, uint64_t seed,
                  Values values = Values::kSmall);
// The inputs of ranks 0..size-1 (what every rank submits for that tensor).
std::vector<Buffer> make_inputs(DataType dtype, const Shape& shape, int size, int index,
                                uint64_t seed, Values values = Values::kSmall);

// A deterministic integer in [lo, hi] from (a, b, c, d); tests use it to pick
// shapes and splits that all ranks agree on.
int64_t pick(int64_t lo, int64_t hi, uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0);

// post * op_r(pre * inputs[r]); kAverage divides the sum by `divisor` (the
// world size, also when some inputs are a joined rank's zeros). Results as
// doubles in the dtype's range. Integers are exact, as Horovod computes
// them: sums and products wrap around in the dtype's width; a factor other
// than 1 multiplies in double and truncates toward zero, saturating at the
// dtype's bounds; an average with a postscale scales by post / divisor that
// way, one without divides truncating toward zero.
std::vector<double> reference_reduce(const std::vector<Buffer>& inputs, ReduceOp op,
                                     double prescale = 1.0, double postscale = 1.0,
                                     int divisor = 0);

// `value` rounded once to the nearest float16 or bfloat16 value (ties to
// even), straight from the double: what an average that rounds once gives
// for an exact (or nearly exact) double. Subnormal results keep the
// dtype's fixed exponent; float32 and float64 round as a cast does.
double round_once(DataType dtype, double value);

// Concatenation of every rank's input along the first dimension.
Buffer reference_allgather(const std::vector<Buffer>& inputs);

// Rows [begin, end) of the first dimension that reducescatter gives `rank`.
std::pair<int64_t, int64_t> reducescatter_rows(int64_t rows, int size, int rank);
// The slice of a reduction result that `rank` receives.
std::vector<double> reference_reducescatter(const std::vector<Buffer>& inputs, ReduceOp op,
                                            int rank, double prescale = 1.0, double postscale = 1.0);

// Splits that `rank` sends (one entry per rank, each in [0, 3], zeros
// included), a function of (rank, size, seed) only.
std::vector<int64_t> alltoall_splits(int rank, int size, uint64_t seed);
// What `rank` receives from an alltoall of `inputs` with per-rank `splits`
// (splits[j] are rank j's splits; an empty vector means equal parts).
struct AlltoallResult {
  Buffer output;
  std::vector<int64_t> received_splits;
};
AlltoallResult reference_alltoall(const std::vector<Buffer>& inputs,
                                  const std::vector<std::vector<int64_t>>& splits, int rank);

// Comparison: exact for integers and bool, |a - e| <= atol + rtol * |e| for
// floating dtypes with a tolerance that fits the dtype (float16 and bfloat16
// round each scaling step; float32/float64 need to be nearly exact).
::testing::AssertionResult matches(const chorus::Tensor& actual,
                                   const std::vector<double>& expected);
// Byte-for-byte equality, for collectives that only move data.
::testing::AssertionResult same_bytes(const chorus::Tensor& actual, const Buffer& expected);

// Names parameterized tests after their dtype ("float16").
struct DtypeParamName {
  std::string operator()(const ::testing::TestParamInfo<DataType>& param) const {
    return chorus::dtype_name(param.param);
  }
};

// The values of a buffer as doubles (for matches()).
std::vector<double> values_of(const Buffer& buffer);

}  // namespace chorus_test
