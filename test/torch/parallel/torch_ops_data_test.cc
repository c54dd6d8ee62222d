// Data movement on torch tensors: allgather with uneven rows, broadcast (in
// place and out of place) and alltoall with splits, over every dtype they
// support and contiguous and non-contiguous inputs. Each rank builds the
// expected result with plain LibTorch from every rank's regenerated input.
#include <string>
#include <vector>

#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using chorus::torch::TorchHandle;
namespace ct = chorus::torch;

class TorchDataTest : public TorchSuite,
                      public ::testing::WithParamInterface<c10::ScalarType> {};

TEST_P(TorchDataTest, AllgatherUnevenRows) {
  const c10::ScalarType dtype = GetParam();
  std::vector<TorchHandle> handles;
  std::vector<torch::Tensor> expected;
  int index = 0;
  for (Layout layout : all_layouts()) {
    // Rank r contributes r + 2 rows (at least 2, so the views are not contiguous).
    std::vector<torch::Tensor> every_rank;
    for (int r = 0; r < size(); ++r) every_rank.push_back(make_input(dtype, {r + 2, 3}, r, index));
    expected.push_back(torch::cat(every_rank, 0));
    const torch::Tensor mine = with_layout(every_rank[rank()], layout);
    if (layout != Layout::kContiguous) {
      EXPECT_FALSE(mine.is_contiguous());
    }
    handles.push_back(ct::allgather_async(mine, "torch.allgather." + dtype_label(dtype) + "." +
                                                    layout_name(layout)));
    ++index;
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    SCOPED_TRACE(handles[i].name());
    const torch::Tensor result = result_of(handles[i]);
    if (!result.defined()) continue;
    EXPECT_TRUE(torch::equal(result, expected[i])) << result << "\nexpected\n" << expected[i];
  }
  // Blocking form, and an output that outlives its handle.
  torch::Tensor gathered;
  {
    gathered = ct::allgather(make_input(dtype, {rank() + 1}, rank(), 9), "torch.allgather.blocking");
  }
  std::vector<torch::Tensor> every_rank;
  for (int r = 0; r < size(); ++r) every_rank.push_back(make_input(dtype, {r + 1}, r, 9));
  EXPECT_TRUE(torch::equal(gathered, torch::cat(every_rank, 0)));
}

TEST_P(TorchDataTest, BroadcastInPlaceAndOutOfPlace) {
  const c10::ScalarType dtype = GetParam();
  const int root = size() - 1;
  const std::vector<int64_t> shape = {3, 4};
  struct Case {
    torch::Tensor caller, base, original, expected;
    Layout layout;
    bool in_place;
    TorchHandle handle;
  };
  std::vector<Case> cases;
  int index = 10;
  for (Layout layout : all_layouts()) {
    for (bool in_place : {true, false}) {
      Case c;
      c.layout = layout;
      c.in_place = in_place;
      c.caller = with_layout(make_input(dtype, shape, rank(), index), layout, &c.base);
      c.original = c.caller.clone();
      c.expected = make_input(dtype, shape, root, index);
      const std::string name = "torch.broadcast." + dtype_label(dtype) + "." + layout_name(layout) +
                               (in_place ? ".in_place" : ".out_of_place");
      c.handle = in_place ? ct::broadcast_async_(c.caller, root, name)
                          : ct::broadcast_async(c.caller, root, name);
      cases.push_back(std::move(c));
      ++index;
    }
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.handle.name());
    const torch::Tensor result = result_of(c.handle);
    if (!result.defined()) continue;
    EXPECT_TRUE(torch::equal(result, c.expected));
    if (c.in_place) {
      EXPECT_TRUE(result.is_same(c.caller));
      if (c.layout == Layout::kSliced) {
        EXPECT_TRUE(torch::all(skipped_of(c.base) == torch::full({}, kSentinel, c.base.options()))
                        .item<bool>());
      }
    } else {
      EXPECT_TRUE(torch::equal(c.caller, c.original)) << "out-of-place input was modified";
    }
  }
  torch::Tensor value = make_input(dtype, {5}, rank(), 20);
  EXPECT_TRUE(torch::equal(ct::broadcast(value, 0, "torch.broadcast.blocking"),
                           make_input(dtype, {5}, 0, 20)));
  ct::broadcast_(value, 0, "torch.broadcast.blocking_");
  EXPECT_TRUE(torch::equal(value, make_input(dtype, {5}, 0, 20)));
}

// Rows rank `from` sends to rank `to`: 0 to 2, zeros included.
int64_t split(int from, int to) { return (from + 2 * to) % 3; }

TEST_P(TorchDataTest, AlltoallWithSplits) {
  const c10::ScalarType dtype = GetParam();
  if (dtype == torch::kBool) {
    // alltoall refuses bool (chorus.h); the message names the op.
    const torch::Tensor flags = make_input(dtype, {size()}, rank(), 0);
    const chorus::Status refused =
        chorus_test::thrown_by([&] { ct::alltoall_async(flags, "torch.alltoall.bool"); });
    EXPECT_THAT(refused.message(), ::testing::HasSubstr("alltoall does not support bool"));
    return;
  }
  auto input_of = [&](int r, int index) {
    int64_t rows = 0;
    for (int to = 0; to < size(); ++to) rows += split(r, to);
    return make_input(dtype, {rows, 2}, r, index);
  };
  std::vector<TorchHandle> handles;
  std::vector<torch::Tensor> expected;
  std::vector<int64_t> expected_splits;
  for (int to = 0; to < size(); ++to) expected_splits.push_back(split(to, rank()));
  int index = 30;
  for (Layout layout : {Layout::kContiguous, Layout::kSliced}) {
    std::vector<int64_t> splits;
    for (int to = 0; to < size(); ++to) splits.push_back(split(rank(), to));
    std::vector<torch::Tensor> received;
    for (int from = 0; from < size(); ++from) {
      int64_t offset = 0;
      for (int to = 0; to < rank(); ++to) offset += split(from, to);
      received.push_back(input_of(from, index).slice(0, offset, offset + split(from, rank())));
    }
    expected.push_back(torch::cat(received, 0));
    handles.push_back(ct::alltoall_async(with_layout(input_of(rank(), index), layout),
                                         "torch.alltoall." + std::string(layout_name(layout)),
                                         splits));
    ++index;
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    SCOPED_TRACE(handles[i].name());
    const torch::Tensor result = result_of(handles[i]);
    if (!result.defined()) continue;
    EXPECT_TRUE(torch::equal(result, expected[i])) << result << "\nexpected\n" << expected[i];
    EXPECT_EQ(handles[i].received_splits(), expected_splits);
  }
  // Blocking form with equal parts (no splits): 2 rows to every rank.
  const torch::Tensor even = make_input(dtype, {2 * size(), 3}, rank(), 40);
  const auto [output, received_splits] = ct::alltoall(even, "torch.alltoall.even");
  std::vector<torch::Tensor> parts;
  for (int from = 0; from < size(); ++from) {
    parts.push_back(make_input(dtype, {2 * size(), 3}, from, 40).slice(0, 2 * rank(), 2 * rank() + 2));
  }
  EXPECT_TRUE(torch::equal(output, torch::cat(parts, 0)));
  EXPECT_TRUE(torch::equal(received_splits, torch::full({size()}, 2, torch::kInt64)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, TorchDataTest, ::testing::ValuesIn(all_dtypes()),
                         DtypeParamName());

}  // namespace
}  // namespace chorus_torch_test
