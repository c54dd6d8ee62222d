// Scale factors on every reduction: integer allreduces scaled as Horovod
// scales them (each element through double, truncated toward zero; Chorus
// saturates at the dtype's bounds where Horovod's C++ is undefined), sums
// and products that wrap around in the dtype's width, an integer average
// with a postscale folded into one factor (postscale / size), and
// prescale/postscale on reducescatter for every dtype, alone and fused.
// Every result against support/reference (reference_reduce's integer path
// computes in int64 with its own wrap-around and scaling), bit for bit for
// integers.
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using chorus::ReducescatterOptions;

constexpr uint64_t kSeed = 0x5ca1ed;

const std::vector<DataType>& integer_dtypes() {
  static const std::vector<DataType> kTypes = {DataType::kUInt8, DataType::kInt8,  DataType::kInt16,
                                               DataType::kUInt16, DataType::kInt32, DataType::kInt64};
  return kTypes;
}

std::string label(DataType dtype, ReduceOp op) {
  return std::string(chorus::dtype_name(dtype)) + "." + chorus::reduce_op_name(op);
}

Values values_for(ReduceOp op) { return op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall; }

struct Factors {
  double pre;
  double post;
};

// Fractions that truncate (0.37, 0.5 of odd values), one that rounds in
// double (0.1), negative ones (unsigned results saturate at 0), a large one
// that saturates, and one factor alone.
const std::vector<Factors>& integer_factors() {
  static const std::vector<Factors> kFactors = {{0.5, 3.0}, {2.0, 0.1}, {1.0, -0.37}, {-1.5, 1.0}, {40.0, 25.0}};
  return kFactors;
}

struct Pending {
  std::string name;
  Buffer input;
  Buffer original;  // what the input held: a reducescatter leaves it so
  Buffer output;
  std::vector<double> expected;
  Shape expected_shape;
  Handle handle;
};

// Waits for every handle first, so that one wrong result keeps the ranks in
// step, then checks each. `from_handle`: the result is the handle's output
// (reducescatter), else `output`.
void check_all(std::deque<Pending>& pending, bool from_handle) {
  std::vector<chorus::Status> statuses;
  for (Pending& p : pending) statuses.push_back(finish(p.handle));
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(is_ok(statuses[i]));
    if (!statuses[i].ok()) continue;
    if (from_handle) {
      const chorus::Tensor out = p.handle.output();
      EXPECT_EQ(out.shape, p.expected_shape);
      EXPECT_TRUE(matches(out, p.expected));
    } else {
      EXPECT_TRUE(matches(p.output.tensor(), p.expected));
    }
  }
}

class ScaledIntegerAllreduce : public ChorusSuite, public ::testing::WithParamInterface<DataType> {};

// Every op and factor pair, queued together so that they fuse (same op and
// factors) or run alone, in place and out of place.
TEST_P(ScaledIntegerAllreduce, EveryOpAndFactorsAsHorovod) {
  const DataType dtype = GetParam();
  std::deque<Pending> pending;
  int index = 0;
  for (ReduceOp op : all_reduce_ops()) {
    for (const Factors& f : integer_factors()) {
      for (int copy = 0; copy < 2; ++copy) {
        const auto inputs = make_inputs(dtype, {11}, size(), index, kSeed, values_for(op));
        Pending& p = pending.emplace_back();
        p.name = "int." + label(dtype, op) + "." + std::to_string(index++);
        p.input = inputs[rank()];
        p.output = copy == 0 ? Buffer(dtype, {11}) : p.input;
        p.expected = reference_reduce(inputs, op, f.pre, f.post);
        AllreduceOptions options;
        options.op = op;
        options.prescale_factor = f.pre;
        options.postscale_factor = f.post;
        p.handle = submit([&] { return chorus::allreduce_async(p.name, p.input.tensor(), p.output.tensor(), options); });
      }
    }
  }
  check_all(pending, false);
}

// The group's members are fused: each is scaled and averaged as alone.
TEST_P(ScaledIntegerAllreduce, GroupedAverageWithPostscaleFoldsTheAverageIntoTheFactor) {
  const DataType dtype = GetParam();
  const std::vector<Shape> shapes = {{5}, {3, 2}, {1}};
  std::vector<Buffer> inputs, outputs;
  std::vector<std::vector<double>> expected;
  AllreduceOptions options;
  options.op = ReduceOp::kAverage;
  options.prescale_factor = 3.0;
  options.postscale_factor = 0.7;
  for (size_t t = 0; t < shapes.size(); ++t) {
    const auto all = make_inputs(dtype, shapes[t], size(), static_cast<int>(t), kSeed + 1);
    inputs.push_back(all[rank()]);
    outputs.emplace_back(dtype, shapes[t]);
    expected.push_back(reference_reduce(all, options.op, options.prescale_factor, options.postscale_factor));
  }
  std::vector<chorus::Tensor> in, out;
  for (size_t t = 0; t < shapes.size(); ++t) {
    in.push_back(inputs[t].tensor());
    out.push_back(outputs[t].tensor());
  }
  const std::string name = "int.grouped." + std::string(chorus::dtype_name(dtype));
  Handle handle = submit([&] { return chorus::grouped_allreduce_async(name, in, out, options); });
  EXPECT_DONE(handle);
  for (size_t t = 0; t < shapes.size(); ++t) EXPECT_TRUE(matches(outputs[t].tensor(), expected[t])) << "member " << t;
}

INSTANTIATE_TEST_SUITE_P(Integers, ScaledIntegerAllreduce, ::testing::ValuesIn(integer_dtypes()), DtypeParamName());

class IntegerBounds : public ChorusSuite {};

// Values near the 16- and 8-bit bounds: a prescale that saturates, a sum
// and a product that wrap around, a postscale that saturates the wrapped
// sum. The inputs are written here, not generated, so the test says which
// bits it expects.
TEST_F(IntegerBounds, PrescaleSaturatesSumsWrapPostscaleSaturates) {
  struct Case {
    DataType dtype;
    ReduceOp op;
    std::vector<double> values;  // rank r's input: values shifted by r
    Factors factors;
  };
  const std::vector<Case> cases = {
      {DataType::kInt16, ReduceOp::kSum, {20000, -20000, 32767, 100, -7}, {2.0, 1.0}},
      {DataType::kInt16, ReduceOp::kSum, {16000, -16000, 30000, 3, 1}, {1.0, 1.5}},
      {DataType::kInt16, ReduceOp::kProduct, {300, -300, 181, 2, 1}, {1.0, 1.0}},
      {DataType::kUInt16, ReduceOp::kSum, {40000, 65535, 1, 30000, 7}, {1.0, 0.75}},
      {DataType::kUInt16, ReduceOp::kMax, {40000, 2, 65000, 7, 9}, {1.2, 0.5}},
      {DataType::kUInt16, ReduceOp::kProduct, {256, 300, 65535, 2, 1}, {1.0, 1.0}},
      {DataType::kInt8, ReduceOp::kSum, {100, -100, 127, 5, -3}, {1.3, 1.0}},
      {DataType::kUInt8, ReduceOp::kAverage, {200, 255, 3, 100, 0}, {1.0, 2.5}},
  };
  std::deque<Pending> pending;
  int index = 0;
  for (const Case& c : cases) {
    std::vector<Buffer> inputs;
    for (int r = 0; r < size(); ++r) {
      Buffer b(c.dtype, {static_cast<int64_t>(c.values.size())});
      for (size_t i = 0; i < c.values.size(); ++i) {
        // Small values differ by rank; those near a bound stay on it.
        const double v = c.values[i];
        b.set(static_cast<int64_t>(i), std::fabs(v) < 50 ? v + r : v);
      }
      inputs.push_back(b);
    }
    Pending& p = pending.emplace_back();
    p.name = "bounds." + label(c.dtype, c.op) + "." + std::to_string(index++);
    p.input = inputs[rank()];
    p.output = Buffer(c.dtype, p.input.shape());
    p.expected = reference_reduce(inputs, c.op, c.factors.pre, c.factors.post);
    AllreduceOptions options;
    options.op = c.op;
    options.prescale_factor = c.factors.pre;
    options.postscale_factor = c.factors.post;
    p.handle = submit([&] { return chorus::allreduce_async(p.name, p.input.tensor(), p.output.tensor(), options); });
  }
  check_all(pending, false);
}

// The bits of the first case worked out by hand at np 2: rank 0 has
// {20000, -20000, 32767, 100, -7}, rank 1 {20000, -20000, 32767, 101, -6};
// prescale 2 saturates 40000 to 32767 and -40000 to -32768, and the sums
// wrap: 32767 + 32767 = 65534 -> -2; -32768 * 2 -> 0; 32767 * 2 -> 65534 ->
// -2; 2 * 201 = 402; 2 * (-13) = -26.
TEST_F(IntegerBounds, HandWorkedInt16BitsAtTwoRanks) {
  if (size() != 2) GTEST_SKIP() << "worked out for np 2";
  Buffer input(DataType::kInt16, {5});
  const std::vector<double> mine = rank() == 0 ? std::vector<double>{20000, -20000, 32767, 100, -7}
                                               : std::vector<double>{20000, -20000, 32767, 101, -6};
  for (size_t i = 0; i < mine.size(); ++i) input.set(static_cast<int64_t>(i), mine[i]);
  AllreduceOptions options;
  options.op = ReduceOp::kSum;
  options.prescale_factor = 2.0;
  Handle handle = submit([&] { return chorus::allreduce_async("bounds.by_hand", input.tensor(), options); });
  ASSERT_DONE(handle);
  EXPECT_EQ(values_of(input), (std::vector<double>{-2, 0, -2, 402, -26}));
}

class ScaledReducescatter : public ChorusSuite, public ::testing::WithParamInterface<DataType> {};

// Every op with factors, alone (uneven rows: some ranks get one row more)
// and several in flight at once with the same options (they fuse).
TEST_P(ScaledReducescatter, EveryOpAloneAndFused) {
  const DataType dtype = GetParam();
  const bool floating = chorus::is_floating_point(dtype);
  // Floating dtypes: factors that keep kSmall inputs exact (0.5) and ones
  // that round (3, 0.1); integers: Horovod's truncation as above.
  const std::vector<Factors> factors =
      floating ? std::vector<Factors>{{0.5, 3.0}, {2.0, 0.1}, {1.0, 0.25}} : integer_factors();
  std::deque<Pending> pending;
  int index = 0;
  for (ReduceOp op : all_reduce_ops()) {
    for (const Factors& f : factors) {
      for (int64_t rows : {int64_t{2} * size() + 1, int64_t{size()}}) {
        const Shape shape = {rows, 2};
        const auto inputs = make_inputs(dtype, shape, size(), index, kSeed + 2, values_for(op));
        Pending& p = pending.emplace_back();
        p.name = "rs." + label(dtype, op) + "." + std::to_string(index++);
        p.input = inputs[rank()];
        p.original = inputs[rank()];
        p.expected = reference_reducescatter(inputs, op, rank(), f.pre, f.post);
        const auto range = reducescatter_rows(rows, size(), rank());
        p.expected_shape = {range.second - range.first, 2};
        ReducescatterOptions options;
        options.op = op;
        options.prescale_factor = f.pre;
        options.postscale_factor = f.post;
        p.handle = submit([&] { return chorus::reducescatter_async(p.name, p.input.tensor(), options); });
      }
    }
  }
  check_all(pending, true);
  // The input is left as it was: prescaling works on a copy.
  for (Pending& p : pending) EXPECT_TRUE(same_bytes(p.input.tensor(), p.original)) << p.name;
}

// The blocking form takes the options too (an average with both factors).
TEST_P(ScaledReducescatter, BlockingFormTakesTheOptions) {
  const DataType dtype = GetParam();
  const auto inputs = make_inputs(dtype, {3, 2}, size(), 99, kSeed + 3);
  Buffer mine = inputs[rank()];
  ReducescatterOptions options;
  options.op = ReduceOp::kAverage;
  options.prescale_factor = 2.0;
  options.postscale_factor = 0.5;
  const std::string name = "rs.blocking." + std::string(chorus::dtype_name(dtype));
  Handle handle;
  const chorus::Status thrown = thrown_by([&] { handle = chorus::reducescatter(name, mine.tensor(), options); });
  ASSERT_TRUE(is_ok(thrown));
  EXPECT_TRUE(matches(handle.output(), reference_reducescatter(inputs, options.op, rank(), 2.0, 0.5)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ScaledReducescatter, ::testing::ValuesIn(numeric_dtypes()), DtypeParamName());

}  // namespace
}  // namespace chorus_test
