// The torch front end's grouped allgather and reducescatter (members of
// several dtypes, rows that differ between ranks, a non-contiguous member),
// join (the others' allreduce averages the joined rank's zeros, their
// allgather fails naming it; afterwards everything runs again), barrier, and
// timeline control (rank 0's trace holds exactly what ran between start and
// stop). Each rank computes the expected values with plain LibTorch from
// every rank's regenerated input.
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "support/chrome_trace.h"
#include "torch_test_support.h"

namespace chorus_torch_test {
namespace {

using chorus::ReduceOp;
using chorus::torch::TorchHandle;
namespace ct = chorus::torch;

class TorchGroupJoinTimeline : public TorchSuite {};

// Member m's shape on `rank`: rows differ between ranks (none on some).
std::vector<int64_t> gather_shape(int m, int rank) {
  switch (m) {
    case 0: return {1 + rank, 3};
    case 1: return {rank % 2 == 0 ? 2 : 0, 2, 2};
    default: return {3 - rank % 3, 4};
  }
}

TEST_F(TorchGroupJoinTimeline, GroupedAllgatherConcatenatesEveryMember) {
  const std::vector<c10::ScalarType> dtypes = {torch::kFloat32, torch::kInt64, torch::kBool};
  std::vector<torch::Tensor> mine;
  std::vector<torch::Tensor> expected;
  for (int m = 0; m < 3; ++m) {
    std::vector<torch::Tensor> every;
    for (int r = 0; r < size(); ++r) every.push_back(make_input(dtypes[m], gather_shape(m, r), r, 10 + m));
    expected.push_back(torch::cat(every, 0));
    mine.push_back(every[static_cast<size_t>(rank())]);
  }
  // A non-contiguous member is copied first.
  mine[2] = with_layout(mine[2], Layout::kTransposed);
  TorchHandle handle = ct::grouped_allgather_async(mine, "torch.group.gather");
  EXPECT_TRUE(close_to(result_of(handle), expected[0]));
  const std::vector<torch::Tensor> outputs = handle.outputs();
  ASSERT_EQ(outputs.size(), 3u);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(outputs[m].scalar_type(), dtypes[m]) << m;
    EXPECT_TRUE(close_to(outputs[m], expected[m])) << m;
  }
  const std::vector<torch::Tensor> blocking = ct::grouped_allgather(mine, "torch.group.gather.blocking");
  ASSERT_EQ(blocking.size(), 3u);
  for (int m = 0; m < 3; ++m) EXPECT_TRUE(close_to(blocking[m], expected[m])) << m;
}

TEST_F(TorchGroupJoinTimeline, GroupedReducescatterGivesEachRankItsRows) {
  const std::vector<c10::ScalarType> dtypes = {torch::kFloat32, torch::kInt32, torch::kFloat64};
  const std::vector<std::vector<int64_t>> shapes = {{7, 2}, {5}, {2, 3}};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
    std::vector<torch::Tensor> mine, expected;
    for (int m = 0; m < 3; ++m) {
      const auto every = inputs_as_double(dtypes[m], shapes[m], size(), 20 + m);
      torch::Tensor reduced = torch::stack(every).sum(0);
      if (op == ReduceOp::kAverage) {
        reduced = reduced / static_cast<double>(size());
        if (!at::isFloatingType(dtypes[m])) reduced = reduced.trunc();
      }
      const auto rows = scatter_rows(shapes[m][0], size(), rank());
      expected.push_back(reduced.slice(0, rows.first, rows.second));
      mine.push_back(make_input(dtypes[m], shapes[m], rank(), 20 + m));
    }
    const std::vector<torch::Tensor> outputs =
        ct::grouped_reducescatter(mine, std::string("torch.group.scatter.") + chorus::reduce_op_name(op), op);
    ASSERT_EQ(outputs.size(), 3u);
    for (int m = 0; m < 3; ++m) {
      EXPECT_EQ(outputs[m].scalar_type(), dtypes[m]) << m;
      EXPECT_TRUE(close_to(outputs[m], expected[m])) << m << " " << chorus::reduce_op_name(op);
    }
  }
}

TEST_F(TorchGroupJoinTimeline, JoinedRankZerosAndAllgatherErrors) {
  const int last_rank = size() - 1;
  // The last rank has no data: it joins at once; join() returns only once
  // every rank has joined.
  if (rank() == last_rank) {
    const int last = ct::join();
    EXPECT_NE(last, last_rank);
  } else {
    const std::vector<int64_t> shape = {4, 2};
    std::vector<torch::Tensor> every = inputs_as_double(torch::kFloat32, shape, size(), 30);
    every[static_cast<size_t>(last_rank)].zero_();  // the joined rank's zeros
    const torch::Tensor average = torch::stack(every).sum(0) / static_cast<double>(size());
    EXPECT_TRUE(close_to(ct::allreduce(make_input(torch::kFloat32, shape, rank(), 30), "torch.join.average"),
                         average));
    const std::string error =
        error_of(ct::allgather_async(make_input(torch::kFloat32, shape, rank(), 31), "torch.join.gather"));
    EXPECT_EQ(error, "allgather 'torch.join.gather' cannot run while rank " + std::to_string(last_rank) +
                         " has joined: a joined rank takes part only in allreduces (contributing zeros), "
                         "barriers and timeline control; run it on every rank before join(), or after join() "
                         "has returned");
    // Each rank's allgather fails as soon as it asks: an allreduce of the
    // ranks still in keeps a fast one from joining (and so being named in
    // a slow one's error) before the others have asked.
    ct::allreduce(make_input(torch::kFloat32, shape, rank(), 32), "torch.join.asked");
    const int last = ct::join();
    EXPECT_NE(last, last_rank);
  }
  // Everyone has joined: the same allgather runs, and so does a barrier.
  ct::barrier();
  std::vector<torch::Tensor> every;
  for (int r = 0; r < size(); ++r) every.push_back(make_input(torch::kFloat32, {2, 2}, r, 32));
  EXPECT_TRUE(close_to(ct::allgather(every[static_cast<size_t>(rank())], "torch.join.gather"), torch::cat(every, 0)));
}

TEST_F(TorchGroupJoinTimeline, TimelineHoldsWhatRanBetweenStartAndStop) {
  const std::string stem = chorus_test::temp_dir() + "/" + chorus_test::shared_token() + ".torch.timeline";
  const std::string path = stem + ".json", second = stem + ".second.json", third = stem + ".third.json";
  const torch::Tensor x = make_input(torch::kFloat32, {3}, rank(), 40);
  ct::allreduce(x, "torch.tl.before");
  ct::start_timeline(path, /*mark_cycles=*/true);
  chorus::AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  const torch::Tensor summed = ct::allreduce(x, "torch.tl.during", sum);
  const std::vector<torch::Tensor> pair = ct::grouped_allgather({x, x}, "torch.tl.group");
  ct::stop_timeline();
  ct::allreduce(x, "torch.tl.after");
  const std::vector<torch::Tensor> every = inputs_as_double(torch::kFloat32, {3}, size(), 40);
  EXPECT_TRUE(close_to(summed, torch::stack(every).sum(0)));
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_TRUE(close_to(pair[1], torch::cat(every, 0)));
  // Starting twice is refused on every rank; the first start goes on.
  ct::start_timeline(second);
  try {
    ct::start_timeline(third);
    ADD_FAILURE() << "a second start_timeline() succeeded";
  } catch (const chorus::Error& e) {
    EXPECT_EQ(e.code(), chorus::StatusCode::kPreconditionFailed) << e.what();
  }
  ct::stop_timeline();
  chorus_test::test_barrier();
  if (rank() != 0) return;
  const std::string text = chorus_test::read_file(path);
  std::vector<double> markers;
  std::set<std::string> names;
  for (const auto& [tensor, spans] : chorus_test::parse_trace(text, &markers)) names.insert(tensor);
  EXPECT_EQ(names, (std::set<std::string>{"torch.tl.during", "torch.tl.group.0", "torch.tl.group.1"})) << text;
  EXPECT_FALSE(markers.empty()) << "no CYCLE_START marker:\n" << text;
  EXPECT_TRUE(chorus_test::parse_trace(chorus_test::read_file(second)).empty());
  EXPECT_FALSE(chorus_test::file_exists(third));
  std::remove(path.c_str());
  std::remove(second.c_str());
}

}  // namespace
}  // namespace chorus_torch_test
