// Reductions on torch tensors: allreduce (every numeric dtype x contiguous,
// transposed and sliced inputs x in place and out of place), grouped
// allreduce and reducescatter with uneven rows. Each rank computes the
// expected result with plain LibTorch from every rank's regenerated input.
#include <deque>
#include <string>
#include <vector>

#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using chorus::AllreduceOptions;
using chorus::ReduceOp;
using chorus::torch::TorchHandle;
namespace ct = chorus::torch;

// The reduction of `inputs` (float64) that `op` computes in `dtype`.
torch::Tensor reference(const std::vector<torch::Tensor>& inputs, ReduceOp op,
                        c10::ScalarType dtype) {
  const torch::Tensor stacked = torch::stack(inputs);
  switch (op) {
    case ReduceOp::kSum: return stacked.sum(0);
    case ReduceOp::kMax: return std::get<0>(stacked.max(0));
    case ReduceOp::kAverage: {
      torch::Tensor mean = stacked.sum(0) / static_cast<double>(inputs.size());
      // Integer averages truncate toward zero (docs/CONVENTIONS.md).
      return at::isFloatingType(dtype) ? mean : mean.trunc();
    }
    default: break;
  }
  ADD_FAILURE() << "no reference for this op";
  return torch::Tensor();
}

class TorchAllreduceTest : public TorchSuite,
                           public ::testing::WithParamInterface<c10::ScalarType> {};

struct Case {
  std::string name;
  torch::Tensor caller;  // the tensor handed to Chorus
  torch::Tensor base;    // what a sliced view lives in
  torch::Tensor original;
  torch::Tensor expected;
  Layout layout = Layout::kContiguous;
  bool in_place = false;
  TorchHandle handle;
};

TEST_P(TorchAllreduceTest, EveryLayoutInPlaceAndOutOfPlace) {
  const c10::ScalarType dtype = GetParam();
  const std::vector<int64_t> shape = {4, 5};
  const std::vector<ReduceOp> ops = {ReduceOp::kSum,
                                     at::isFloatingType(dtype) ? ReduceOp::kAverage : ReduceOp::kMax};
  std::deque<Case> cases;
  int index = 0;
  for (ReduceOp op : ops) {
    for (Layout layout : all_layouts()) {
      for (bool in_place : {true, false}) {
        Case& c = cases.emplace_back();
        c.name = "torch.allreduce." + dtype_label(dtype) + "." + chorus::reduce_op_name(op) + "." +
                 layout_name(layout) + (in_place ? ".in_place" : ".out_of_place");
        c.layout = layout;
        c.in_place = in_place;
        c.caller = with_layout(make_input(dtype, shape, rank(), index), layout, &c.base);
        c.original = c.caller.clone();
        c.expected = reference(inputs_as_double(dtype, shape, size(), index), op, dtype);
        if (layout != Layout::kContiguous) {
          EXPECT_FALSE(c.caller.is_contiguous()) << c.name;
        }
        AllreduceOptions options;
        options.op = op;
        // All submitted before any wait: they are negotiated and fused together.
        c.handle = in_place ? ct::allreduce_async_(c.caller, c.name, options)
                            : ct::allreduce_async(c.caller, c.name, options);
        ++index;
      }
    }
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    const torch::Tensor result = result_of(c.handle);
    if (!result.defined()) continue;
    EXPECT_EQ(result.scalar_type(), dtype);
    EXPECT_TRUE(close_to(result, c.expected));
    if (c.in_place) {
      // The caller's tensor holds the result (copied back when it was not
      // contiguous); wait() returns that very tensor.
      EXPECT_TRUE(result.is_same(c.caller));
      EXPECT_TRUE(close_to(c.caller, c.expected));
      if (c.layout == Layout::kSliced) {
        EXPECT_TRUE(torch::all(skipped_of(c.base) == kSentinel).item<bool>())
            << "the elements between the slice's were overwritten";
      }
    } else {
      EXPECT_TRUE(torch::equal(c.caller, c.original)) << "out-of-place input was modified";
      EXPECT_NE(result.data_ptr(), c.caller.data_ptr());
    }
  }
}

TEST_P(TorchAllreduceTest, BlockingFormsAndScaling) {
  const c10::ScalarType dtype = GetParam();
  const std::vector<int64_t> shape = {6};
  const torch::Tensor mine = make_input(dtype, shape, rank(), 40);
  const torch::Tensor sum = reference(inputs_as_double(dtype, shape, size(), 40), ReduceOp::kSum, dtype);
  AllreduceOptions options;
  options.op = ReduceOp::kSum;
  EXPECT_TRUE(close_to(ct::allreduce(mine, "torch.blocking." + dtype_label(dtype), options), sum));
  torch::Tensor inout = mine.clone();
  const void* memory = inout.data_ptr();
  ct::allreduce_(inout, "torch.blocking_.", options);
  EXPECT_TRUE(close_to(inout, sum));
  EXPECT_EQ(inout.data_ptr(), memory) << "a contiguous in-place allreduce must not reallocate";
  options.prescale_factor = 0.5;
  options.postscale_factor = 4.0;
  if (at::isFloatingType(dtype)) {
    EXPECT_TRUE(close_to(ct::allreduce(mine, "torch.scaled", options), sum * 2.0));
  } else {
    // Horovod's rule: each input halved in double and truncated toward
    // zero, the sum times 4 (exact here).
    torch::Tensor halved_sum = torch::zeros({6}, torch::kFloat64);
    for (const torch::Tensor& input : inputs_as_double(dtype, shape, size(), 40)) {
      halved_sum += torch::trunc(input * 0.5);
    }
    EXPECT_TRUE(close_to(ct::allreduce(mine, "torch.scaled", options), (halved_sum * 4.0).to(dtype)));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TorchAllreduceTest, ::testing::ValuesIn(numeric_dtypes()),
                         DtypeParamName());

class TorchGroupedTest : public TorchSuite {};

TEST_F(TorchGroupedTest, MixedLayoutsInPlaceAndOutOfPlace) {
  const std::vector<std::vector<int64_t>> shapes = {{3}, {4, 5}, {2, 6}, {}};
  const std::vector<Layout> layouts = {Layout::kContiguous, Layout::kTransposed, Layout::kSliced,
                                       Layout::kContiguous};
  for (bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "in place" : "out of place");
    std::vector<torch::Tensor> tensors, originals, expected;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int index = static_cast<int>(50 + i);
      tensors.push_back(with_layout(make_input(torch::kFloat32, shapes[i], rank(), index), layouts[i]));
      originals.push_back(tensors.back().clone());
      expected.push_back(
          reference(inputs_as_double(torch::kFloat32, shapes[i], size(), index), ReduceOp::kAverage,
                    torch::kFloat32));
    }
    const std::string name = std::string("torch.grouped.") + (in_place ? "in_place" : "out_of_place");
    TorchHandle handle = in_place ? ct::grouped_allreduce_async_(tensors, name)
                                  : ct::grouped_allreduce_async(tensors, name);
    const torch::Tensor first = result_of(handle);
    if (!first.defined()) continue;
    const std::vector<torch::Tensor> outputs = handle.outputs();
    ASSERT_EQ(outputs.size(), shapes.size());
    EXPECT_TRUE(first.is_same(outputs[0]));
    for (size_t i = 0; i < shapes.size(); ++i) {
      SCOPED_TRACE("member " + std::to_string(i));
      EXPECT_TRUE(close_to(outputs[i], expected[i]));
      if (in_place) {
        EXPECT_TRUE(outputs[i].is_same(tensors[i]));
      } else {
        EXPECT_TRUE(torch::equal(tensors[i], originals[i]));
      }
    }
  }
  // Blocking forms.
  std::vector<torch::Tensor> pair = {make_input(torch::kFloat64, {5}, rank(), 60),
                                     with_layout(make_input(torch::kFloat64, {3, 2}, rank(), 61),
                                                 Layout::kTransposed)};
  const auto results = ct::grouped_allreduce(pair, "torch.grouped.blocking");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(close_to(results[0], reference(inputs_as_double(torch::kFloat64, {5}, size(), 60),
                                             ReduceOp::kAverage, torch::kFloat64)));
  ct::grouped_allreduce_(pair, "torch.grouped.blocking_");
  EXPECT_TRUE(close_to(pair[1], reference(inputs_as_double(torch::kFloat64, {3, 2}, size(), 61),
                                          ReduceOp::kAverage, torch::kFloat64)));
}

class TorchReducescatterTest : public TorchSuite,
                               public ::testing::WithParamInterface<c10::ScalarType> {};

TEST_P(TorchReducescatterTest, UnevenRowsEveryLayout) {
  const c10::ScalarType dtype = GetParam();
  // Rows not divisible by the number of ranks: the first ranks get one more.
  const std::vector<int64_t> shape = {2 * size() + 1, 3};
  const auto [begin, end] = scatter_rows(shape[0], size(), rank());
  std::vector<TorchHandle> handles;
  std::vector<torch::Tensor> expected;
  int index = 70;
  for (Layout layout : all_layouts()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      const torch::Tensor input = with_layout(make_input(dtype, shape, rank(), index), layout);
      expected.push_back(reference(inputs_as_double(dtype, shape, size(), index), op, dtype)
                             .slice(0, begin, end));
      handles.push_back(ct::reducescatter_async(
          input, "torch.reducescatter." + std::to_string(index), op));
      ++index;
    }
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    SCOPED_TRACE(handles[i].name());
    const torch::Tensor result = result_of(handles[i]);
    if (!result.defined()) continue;
    EXPECT_EQ(result.scalar_type(), dtype);
    EXPECT_TRUE(close_to(result, expected[i]));
  }
  const torch::Tensor input = make_input(dtype, shape, rank(), 90);
  EXPECT_TRUE(close_to(ct::reducescatter(input, "torch.reducescatter.blocking"),
                       reference(inputs_as_double(dtype, shape, size(), 90), ReduceOp::kSum, dtype)
                           .slice(0, begin, end)));
}

// Scale factors as an allreduce's: floating dtypes multiply (exact here),
// integers truncate each prescaled input toward zero (Horovod's rule).
TEST_P(TorchReducescatterTest, PrescaleAndPostscale) {
  const c10::ScalarType dtype = GetParam();
  const std::vector<int64_t> shape = {size() + 1, 2};
  const auto [begin, end] = scatter_rows(shape[0], size(), rank());
  chorus::ReducescatterOptions options;
  options.op = ReduceOp::kSum;
  options.prescale_factor = 0.5;
  options.postscale_factor = 2.0;
  torch::Tensor expected = torch::zeros(shape, torch::kFloat64);
  for (const torch::Tensor& input : inputs_as_double(dtype, shape, size(), 95)) {
    expected += at::isFloatingType(dtype) ? input * 0.5 : torch::trunc(input * 0.5);
  }
  expected = (expected * 2.0).slice(0, begin, end).to(dtype);
  const torch::Tensor mine = make_input(dtype, shape, rank(), 95);
  EXPECT_TRUE(close_to(ct::reducescatter(mine, "torch.reducescatter.scaled", options), expected));
  TorchHandle handle = ct::reducescatter_async(mine, "torch.reducescatter.scaled_async", options);
  const torch::Tensor result = result_of(handle);
  if (result.defined()) {
    EXPECT_TRUE(close_to(result, expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TorchReducescatterTest,
                         ::testing::Values(torch::kFloat32, torch::kFloat64, torch::kFloat16,
                                           torch::kBFloat16, torch::kInt32, torch::kInt64,
                                           torch::kUInt8, torch::kInt16),
                         DtypeParamName());

}  // namespace
}  // namespace chorus_torch_test
