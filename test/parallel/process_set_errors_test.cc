// Process sets, the error cases: a rank outside a set that submits to it,
// bad rank lists (every rank fails, naming the rank that rejected its list),
// ranks that pass different lists (in the negotiation, naming both), a set removed with work in flight, use of a
// removed set, removing the global set, GPU tensors on a set, a broadcast
// root outside the set. After each error the runtime goes on working.
#include <algorithm>
#include <string>
#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::ProcessSet;
using ::testing::HasSubstr;

class ProcessSetErrors : public ChorusSuite {
 protected:
  // A sum over `set` of one element, checked against its members' ranks.
  void expect_sum_works(const ProcessSet& set, const std::vector<int>& ranks, const std::string& name) {
    if (!std::binary_search(ranks.begin(), ranks.end(), rank())) return;
    double x = rank() + 1.0;
    chorus::AllreduceOptions options;
    options.op = chorus::ReduceOp::kSum;
    options.process_set = set;
    Handle h = submit([&] {
      return chorus::allreduce_async(name, chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), options);
    });
    EXPECT_DONE(h);
    double expected = 0;
    for (int r : ranks) expected += r + 1.0;
    EXPECT_DOUBLE_EQ(x, expected);
  }
};

TEST_F(ProcessSetErrors, ARankOutsideTheSetCannotSubmitToIt) {
  const ProcessSet set = chorus::add_process_set({0, 1});
  // A set of rank 0 alone has outsiders at every np.
  const ProcessSet solo = chorus::add_process_set({0});
  if (rank() != 0) {
    double x = 1;
    chorus::AllreduceOptions options;
    options.process_set = solo;
    const chorus::Status status =
        thrown_by([&] { chorus::allreduce("outsider", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), options); });
    EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("process set " + std::to_string(solo.id) + " [0]"));
    EXPECT_THAT(status.message(), HasSubstr("rank " + std::to_string(rank()) + " is not in"));
    EXPECT_THAT(thrown_by([&] { chorus::barrier(solo); }).message(), HasSubstr("is not in process set"));
    EXPECT_THAT(thrown_by([&] {
                  chorus::allgather("outsider.g", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), nullptr, solo);
                }).message(),
                HasSubstr("is not in process set"));
  }
  expect_sum_works(set, {0, 1}, "after.outsider");
  chorus::remove_process_set(solo);
  chorus::remove_process_set(set);
}

TEST_F(ProcessSetErrors, BadRankListsAreRefused) {
  const auto error_of = [](const std::vector<int>& ranks) {
    return thrown_by([&] { chorus::add_process_set(ranks); });
  };
  EXPECT_THAT(error_of({}).message(), HasSubstr("empty rank list"));
  EXPECT_THAT(error_of({0, 1, 0}).message(), HasSubstr("rank 0 twice in [0, 1, 0]"));
  EXPECT_THAT(error_of({0, size()}).message(),
              HasSubstr("rank " + std::to_string(size()) + " in [0, " + std::to_string(size()) + "]"));
  EXPECT_THAT(error_of({-1}).message(), HasSubstr("expected ranks in [0, " + std::to_string(size()) + ")"));
  // The refused adds took no id: sets still work and ids still agree.
  const ProcessSet set = chorus::add_process_set({1, 0});
  EXPECT_EQ(chorus::process_set_ranks(set), (std::vector<int>{0, 1}));
  EXPECT_EQ(exchange(set.id), std::vector<int>(size(), set.id));
  expect_sum_works(set, {0, 1}, "after.bad.lists");
  chorus::remove_process_set(set);
}

TEST_F(ProcessSetErrors, DisagreeingListsNameBothRanks) {
  // Rank 0 asks for {0}, every other rank for {0, 1}.
  const std::vector<int> mine = rank() == 0 ? std::vector<int>{0} : std::vector<int>{0, 1};
  const chorus::Status status = thrown_by([&] { chorus::add_process_set(mine); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kMismatch);
  EXPECT_THAT(status.message(), HasSubstr("rank 0 has [0], rank 1 has [0, 1]"));
  // The failed add took no id: the next one is the same on every rank.
  const ProcessSet set = chorus::add_process_set({0, 1});
  EXPECT_EQ(exchange(set.id), std::vector<int>(size(), set.id));
  expect_sum_works(set, {0, 1}, "after.disagreement");
  chorus::remove_process_set(set);
}

// Rank 0 passes a list it rejects itself while every other rank passes a
// valid one: every rank fails that add, naming rank 0 and why, and the next
// add (another list) meets the next add on every rank, not the failed one.
TEST_F(ProcessSetErrors, AListOneRankRejectsFailsTheAddOnEveryRank) {
  const std::vector<int> mine = rank() == 0 ? std::vector<int>{0, 0} : std::vector<int>{size() - 1};
  const chorus::Status status = thrown_by([&] { chorus::add_process_set(mine); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument) << status.to_string();
  EXPECT_THAT(status.message(), HasSubstr("'chorus.process_set.add."));
  EXPECT_THAT(status.message(),
              HasSubstr("rejected on rank 0: add_process_set got rank 0 twice in [0, 0]; expected each rank at most once"));
  const ProcessSet set = chorus::add_process_set({0, 1});
  EXPECT_EQ(chorus::process_set_ranks(set), (std::vector<int>{0, 1}));
  EXPECT_EQ(exchange(set.id), std::vector<int>(size(), set.id));
  expect_sum_works(set, {0, 1}, "after.one.rank.rejected");
  chorus::remove_process_set(set);
}

// The same for remove_process_set: rank 0 names the global set, the others
// a set that exists; no set goes, and the next removal meets the next one.
TEST_F(ProcessSetErrors, ARemovalOneRankRejectsFailsOnEveryRank) {
  const ProcessSet pair = chorus::add_process_set({0, 1});
  const ProcessSet solo = chorus::add_process_set({0});
  const chorus::Status status =
      thrown_by([&] { chorus::remove_process_set(rank() == 0 ? ProcessSet::global() : pair); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument) << status.to_string();
  EXPECT_THAT(status.message(),
              HasSubstr("rejected on rank 0: remove_process_set: the global set (id 0) cannot be removed"));
  EXPECT_EQ(chorus::process_sets().size(), 3u);
  chorus::remove_process_set(solo);
  EXPECT_EQ(exchange(static_cast<int>(chorus::process_sets().size())), std::vector<int>(size(), 2));
  EXPECT_THAT(thrown_by([&] { chorus::process_set_ranks(solo); }).message(), HasSubstr("does not exist"));
  expect_sum_works(pair, {0, 1}, "after.removal.rejected");
  chorus::remove_process_set(pair);
}

TEST_F(ProcessSetErrors, RemovingWithWorkInFlightFailsItOnEveryRank) {
  std::vector<int> all;
  for (int r = 0; r < size(); ++r) all.push_back(r);
  const ProcessSet set = chorus::add_process_set(all);
  // Every rank but the last submits; the last never does, so the tensor is
  // still waiting when the set goes.
  double x = 1;
  Handle pending;
  chorus::AllreduceOptions options;
  options.process_set = set;
  if (rank() != size() - 1) {
    pending = submit([&] {
      return chorus::allreduce_async("stranded", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), options);
    });
  }
  test_barrier();  // every submission is in before anyone removes
  chorus::remove_process_set(set);
  if (rank() != size() - 1) {
    const chorus::Status status = finish(pending);
    EXPECT_EQ(status.code(), chorus::StatusCode::kAborted);
    EXPECT_THAT(status.message(), HasSubstr("process set " + std::to_string(set.id)));
    EXPECT_THAT(status.message(), HasSubstr("'stranded'"));
  }
  // Later use of the removed set: a clear error, locally.
  const chorus::Status later = thrown_by(
      [&] { chorus::allreduce("late", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), options); });
  EXPECT_EQ(later.code(), chorus::StatusCode::kInvalidArgument);
  EXPECT_THAT(later.message(), HasSubstr("process set " + std::to_string(set.id) + " does not exist"));
  EXPECT_THAT(thrown_by([&] { chorus::remove_process_set(set); }).message(), HasSubstr("does not exist"));
  EXPECT_THAT(thrown_by([&] { chorus::process_set_ranks(set); }).message(), HasSubstr("does not exist"));
  // The global set still works, the same name included.
  expect_sum_works(ProcessSet::global(), all, "stranded");
}

TEST_F(ProcessSetErrors, TheGlobalSetCannotBeRemoved) {
  const chorus::Status status = thrown_by([] { chorus::remove_process_set(ProcessSet::global()); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("global set (id 0) cannot be removed"));
  ASSERT_FALSE(chorus::process_sets().empty());
  EXPECT_TRUE(chorus::process_sets().front().is_global());
  EXPECT_EQ(chorus::process_set_size(ProcessSet::global()), size());
  EXPECT_EQ(chorus::process_set_rank(ProcessSet::global()), rank());
}

TEST_F(ProcessSetErrors, GpuTensorsAndOutsideRootsAreRefused) {
  const ProcessSet set = chorus::add_process_set({0, 1});
  if (rank() < 2) {
    double x = 0;
    chorus::Tensor on_gpu(&x, chorus::DataType::kFloat64, {1}, chorus::Device::cuda(0));
    chorus::AllreduceOptions options;
    options.process_set = set;
    const chorus::Status gpu = thrown_by([&] { chorus::allreduce("on.gpu", on_gpu, options); });
    EXPECT_EQ(gpu.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(gpu.message(), HasSubstr("process sets on GPUs are not supported yet"));
    if (size() > 2) {
      const chorus::Status root = thrown_by(
          [&] { chorus::broadcast("bad.root", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), 2, set); });
      EXPECT_THAT(root.message(), HasSubstr("root rank 2 is not in process set " + std::to_string(set.id)));
    }
  }
  expect_sum_works(set, {0, 1}, "after.refusals");
  chorus::remove_process_set(set);
}

}  // namespace
}  // namespace chorus_test
