// Reductions through the public API: allreduce (every dtype x every reduce
// op, in place and out of place, prescale/postscale), grouped allreduce,
// reducescatter, edge-case shapes, the async handle's contract and the
// blocking forms. Every result is checked against support/reference.
#include <deque>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;

constexpr uint64_t kSeed = 0xc011ec7;

std::string label(DataType dtype, ReduceOp op) {
  return std::string(chorus::dtype_name(dtype)) + "." + chorus::reduce_op_name(op);
}

Values values_for(ReduceOp op) { return op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall; }

// One allreduce in flight: its buffers (kept at a stable address by the
// deque), handle and expected values.
struct Pending {
  std::string name;
  Buffer input;
  Buffer output;
  std::vector<double> expected;
  bool in_place = true;
  Handle handle;
};

// Waits for every pending allreduce, then checks each result and that an
// out-of-place input was left alone. Waiting for all before checking keeps
// the ranks in step even when one result is wrong.
void check_all(std::deque<Pending>& pending) {
  std::vector<chorus::Status> statuses;
  for (Pending& p : pending) statuses.push_back(finish(p.handle));
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(is_ok(statuses[i]));
    if (!statuses[i].ok()) continue;
    EXPECT_TRUE(matches(p.in_place ? p.input.tensor() : p.output.tensor(), p.expected));
  }
}

class AllreduceTest : public ChorusSuite, public ::testing::WithParamInterface<DataType> {};

TEST_P(AllreduceTest, EveryReduceOpInPlaceAndOutOfPlace) {
  const DataType dtype = GetParam();
  const Shape shape = {7, 3};
  std::deque<Pending> pending;
  std::vector<Buffer> originals;
  int index = 0;
  for (ReduceOp op : all_reduce_ops()) {
    for (bool in_place : {true, false}) {
      const auto inputs = make_inputs(dtype, shape, size(), index, kSeed, values_for(op));
      Pending& p = pending.emplace_back();
      p.name = "allreduce." + label(dtype, op) + (in_place ? ".in_place" : ".out_of_place");
      p.input = inputs[rank()];
      // Garbage in the output, so a runtime that never writes it fails.
      p.output = make_input(dtype, shape, rank(), index + 1000, kSeed);
      p.expected = reference_reduce(inputs, op);
      p.in_place = in_place;
      originals.push_back(inputs[rank()]);
      AllreduceOptions options;
      options.op = op;
      p.handle = submit([&] {
        return in_place ? chorus::allreduce_async(p.name, p.input.tensor(), options)
                        : chorus::allreduce_async(p.name, p.input.tensor(), p.output.tensor(), options);
      });
      ++index;
    }
  }
  check_all(pending);
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!pending[i].in_place) {
      EXPECT_TRUE(same_bytes(pending[i].input.tensor(), originals[i])) << pending[i].name;
    }
  }
}

TEST_P(AllreduceTest, GroupedAllreduceMatchesPerTensorReference) {
  const DataType dtype = GetParam();
  const std::vector<Shape> shapes = {{5}, {2, 3}, {1}, {0}};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
    SCOPED_TRACE(label(dtype, op));
    std::vector<Buffer> inputs, outputs;
    std::vector<std::vector<double>> expected;
    for (size_t t = 0; t < shapes.size(); ++t) {
      const auto all = make_inputs(dtype, shapes[t], size(), static_cast<int>(t), kSeed + 1);
      inputs.push_back(all[rank()]);
      outputs.emplace_back(dtype, shapes[t]);
      expected.push_back(reference_reduce(all, op));
    }
    std::vector<chorus::Tensor> in_tensors, out_tensors;
    for (size_t t = 0; t < shapes.size(); ++t) {
      in_tensors.push_back(inputs[t].tensor());
      out_tensors.push_back(outputs[t].tensor());
    }
    AllreduceOptions options;
    options.op = op;
    const std::string name = "grouped." + label(dtype, op);
    Handle handle = submit([&] { return chorus::grouped_allreduce_async(name, in_tensors, out_tensors, options); });
    EXPECT_DONE(handle);
    if (handle.valid()) {
      EXPECT_EQ(handle.name(), name);
    }
    for (size_t t = 0; t < shapes.size(); ++t) EXPECT_TRUE(matches(outputs[t].tensor(), expected[t])) << "member " << t;
  }
}

TEST_P(AllreduceTest, ReducescatterEveryOpUnevenRows) {
  const DataType dtype = GetParam();
  // 2*size+1 rows: never divisible by size; size-1 rows: the last rank gets
  // none at all.
  const std::vector<int64_t> row_counts = {2 * size() + 1, size() - 1};
  std::deque<Pending> pending;
  std::vector<std::vector<int64_t>> expected_shapes;
  int index = 0;
  for (int64_t rows : row_counts) {
    for (ReduceOp op : all_reduce_ops()) {
      const Shape shape = {rows, 3};
      const auto inputs = make_inputs(dtype, shape, size(), index++, kSeed + 2, values_for(op));
      Pending& p = pending.emplace_back();
      p.name = "reducescatter." + label(dtype, op) + "." + std::to_string(rows);
      p.input = inputs[rank()];
      p.expected = reference_reducescatter(inputs, op, rank());
      const auto range = reducescatter_rows(rows, size(), rank());
      expected_shapes.push_back({range.second - range.first, 3});
      p.handle = submit([&] { return chorus::reducescatter_async(p.name, p.input.tensor(), op); });
    }
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    SCOPED_TRACE(p.name);
    const chorus::Status status = finish(p.handle);
    EXPECT_TRUE(is_ok(status));
    if (!status.ok()) continue;
    const chorus::Tensor out = p.handle.output();
    EXPECT_EQ(out.dtype, dtype);
    EXPECT_EQ(out.shape, expected_shapes[i]);
    EXPECT_TRUE(matches(out, p.expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AllreduceTest, ::testing::ValuesIn(numeric_dtypes()),
                         DtypeParamName());

class ScaledAllreduceTest : public ChorusSuite, public ::testing::WithParamInterface<DataType> {};

TEST_P(ScaledAllreduceTest, PrescaleAndPostscaleEveryOp) {
  const DataType dtype = GetParam();
  struct Factors {
    double pre, post;
  };
  // 0.5 keeps inputs exact; 3 and 0.1 make the postscale round (integers:
  // truncate).
  const std::vector<Factors> factors = {{0.5, 3.0}, {2.0, 0.1}, {1.0, 0.25}};
  std::deque<Pending> pending;
  int index = 0;
  for (ReduceOp op : all_reduce_ops()) {
    for (const Factors& f : factors) {
      const auto inputs = make_inputs(dtype, {9}, size(), index++, kSeed + 3, values_for(op));
      Pending& p = pending.emplace_back();
      p.name = "scaled." + label(dtype, op) + "." + std::to_string(index);
      p.input = inputs[rank()];
      p.output = Buffer(dtype, {9});
      p.in_place = index % 2 == 0;
      p.expected = reference_reduce(inputs, op, f.pre, f.post);
      AllreduceOptions options;
      options.op = op;
      options.prescale_factor = f.pre;
      options.postscale_factor = f.post;
      p.handle = submit([&] {
        return chorus::allreduce_async(p.name, p.input.tensor(),
                                       p.in_place ? p.input.tensor() : p.output.tensor(), options);
      });
    }
  }
  check_all(pending);
}

// Integers too: reference_reduce scales them as Horovod does.
INSTANTIATE_TEST_SUITE_P(Dtypes, ScaledAllreduceTest, ::testing::ValuesIn(numeric_dtypes()), DtypeParamName());

class Collectives : public ChorusSuite {};

TEST_F(Collectives, EdgeShapesZeroOneAndOddElementCounts) {
  // Scalar (rank 0, one element), zero-element shapes and odd sizes that do
  // not line up with any vector width or fusion alignment.
  const std::vector<Shape> shapes = {{}, {1}, {0}, {3, 0}, {0, 4}, {13}, {1, 5, 3}, {1031}, {3, 1, 7}};
  std::deque<Pending> pending;
  int index = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kInt32, DataType::kFloat16, DataType::kUInt8}) {
    for (const Shape& shape : shapes) {
      const auto inputs = make_inputs(dtype, shape, size(), index++, kSeed + 4);
      Pending& p = pending.emplace_back();
      p.name = "shape." + std::string(chorus::dtype_name(dtype)) + "." + std::to_string(index);
      p.input = inputs[rank()];
      p.expected = reference_reduce(inputs, ReduceOp::kSum);
      AllreduceOptions options;
      options.op = ReduceOp::kSum;
      p.handle = submit([&] { return chorus::allreduce_async(p.name, p.input.tensor(), options); });
    }
  }
  check_all(pending);
}

// Members of one grouped allreduce that share memory (the same tensor twice,
// overlapping views of one buffer) give what separate copies would: every
// input is read before any result is written. 400 KB members take the
// shared-memory path, which otherwise reduces a fused message in the tensors
// themselves.
TEST_F(Collectives, GroupedAllreduceOfMembersSharingMemory) {
  const int64_t n = 100000;
  auto original = [](int r, size_t i) { return static_cast<float>(3 * (r + 1) + static_cast<int>(i % 7)); };
  std::vector<float> memory(static_cast<size_t>(n + n / 2));
  const chorus::Tensor first(memory.data(), DataType::kFloat32, {n});
  const chorus::Tensor shifted(memory.data() + n / 2, DataType::kFloat32, {n});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  struct Case {
    std::string name;
    std::vector<chorus::Tensor> members;
    size_t reduced_end;  // elements [0, reduced_end) are reduced, the rest untouched
  };
  const std::vector<Case> cases = {{"shared.same_tensor_twice", {first, first}, static_cast<size_t>(n)},
                                   {"shared.overlapping_views", {first, shifted}, memory.size()}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    for (size_t i = 0; i < memory.size(); ++i) memory[i] = original(rank(), i);
    Handle handle = submit([&] { return chorus::grouped_allreduce_async(c.name, c.members, c.members, sum); });
    EXPECT_DONE(handle);
    size_t wrong = 0, first_wrong = 0;
    for (size_t i = 0; i < memory.size(); ++i) {
      float expected = original(rank(), i);
      if (i < c.reduced_end) {
        expected = 0;
        for (int r = 0; r < size(); ++r) expected += original(r, i);
      }
      if (memory[i] != expected && wrong++ == 0) first_wrong = i;
    }
    EXPECT_EQ(wrong, 0u) << "first wrong element " << first_wrong << ": " << memory[first_wrong];
  }
}

TEST_F(Collectives, AsyncHandleStaysPendingUntilEveryRankSubmits) {
  const auto inputs = make_inputs(DataType::kFloat32, {6}, size(), 0, kSeed + 5);
  Buffer mine = inputs[rank()];
  const std::string name = "async.late";
  AllreduceOptions options;
  options.op = ReduceOp::kSum;
  Handle handle;
  if (rank() == 0) {
    // Only rank 0 has submitted so far: the collective cannot complete.
    handle = submit([&] { return chorus::allreduce_async(name, mine.tensor(), options); });
    EXPECT_TRUE(handle.valid());
    if (handle.valid()) {
      EXPECT_EQ(handle.name(), name);
      EXPECT_FALSE(handle.test());
      EXPECT_FALSE(handle.poll());
      EXPECT_FALSE(handle.wait_for(std::chrono::milliseconds(200)));
      EXPECT_EQ(handle.status().code(), chorus::StatusCode::kInProgress);
    }
  }
  test_barrier();
  if (rank() != 0) handle = submit([&] { return chorus::allreduce_async(name, mine.tensor(), options); });
  EXPECT_DONE(handle);
  if (!handle.valid()) return;
  EXPECT_TRUE(handle.test());
  EXPECT_TRUE(handle.wait_for(std::chrono::milliseconds(0)));
  EXPECT_TRUE(handle.status().ok());
  EXPECT_NO_THROW(handle.wait());
  EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
}

TEST_F(Collectives, BlockingFormsMatchReferences) {
  const DataType dtype = DataType::kFloat64;
  // allreduce, in place and out of place (default op: average).
  const auto a = make_inputs(dtype, {4, 2}, size(), 0, kSeed + 6);
  Buffer inout = a[rank()];
  Buffer out(dtype, {4, 2});
  EXPECT_TRUE(is_ok(thrown_by([&] { chorus::allreduce("blocking.in_place", inout.tensor()); })));
  EXPECT_TRUE(matches(inout.tensor(), reference_reduce(a, ReduceOp::kAverage)));
  Buffer input = a[rank()];
  EXPECT_TRUE(is_ok(thrown_by([&] { chorus::allreduce("blocking.out", input.tensor(), out.tensor()); })));
  EXPECT_TRUE(matches(out.tensor(), reference_reduce(a, ReduceOp::kAverage)));
  EXPECT_TRUE(same_bytes(input.tensor(), a[rank()]));
  // grouped
  const auto g0 = make_inputs(dtype, {3}, size(), 1, kSeed + 6);
  const auto g1 = make_inputs(dtype, {2, 2}, size(), 2, kSeed + 6);
  Buffer i0 = g0[rank()], i1 = g1[rank()], o0(dtype, {3}), o1(dtype, {2, 2});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  EXPECT_TRUE(is_ok(thrown_by([&] {
    chorus::grouped_allreduce("blocking.group", {i0.tensor(), i1.tensor()}, {o0.tensor(), o1.tensor()}, sum);
  })));
  EXPECT_TRUE(matches(o0.tensor(), reference_reduce(g0, ReduceOp::kSum)));
  EXPECT_TRUE(matches(o1.tensor(), reference_reduce(g1, ReduceOp::kSum)));
  // reducescatter with a caller-provided allocator: the output must be the
  // caller's memory, of exactly the shape the split gives this rank.
  const auto rs = make_inputs(dtype, {size() + 2, 2}, size(), 3, kSeed + 6);
  Buffer rs_in = rs[rank()];
  Buffer rs_out;
  int allocations = 0;
  chorus::OutputAllocator allocator = [&](const Shape& shape, DataType t, chorus::Device, chorus::Tensor* o) {
    ++allocations;
    rs_out = Buffer(t, shape);
    *o = rs_out.tensor();
    return chorus::Status::OK();
  };
  Handle rs_handle;
  EXPECT_TRUE(is_ok(thrown_by([&] {
    rs_handle = chorus::reducescatter("blocking.rs", rs_in.tensor(), ReduceOp::kMin, allocator);
  })));
  EXPECT_EQ(allocations, 1);
  if (rs_handle.valid() && rs_handle.test()) {
    EXPECT_EQ(rs_handle.output().data, rs_out.data());
    const auto range = reducescatter_rows(size() + 2, size(), rank());
    EXPECT_EQ(rs_handle.output().shape, (Shape{range.second - range.first, 2}));
    EXPECT_TRUE(matches(rs_out.tensor(), reference_reducescatter(rs, ReduceOp::kMin, rank())));
  }
}

}  // namespace
}  // namespace chorus_test
