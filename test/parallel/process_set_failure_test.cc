// Failing a process set alone (fail_process_set): a member gives up on set
// A while another member waits in one of A's collectives for it. The waiting
// member's collective fails with an error naming the failing rank and its
// reason, later work on A fails at once on every member, while set B and the
// global set (sharing ranks with A) go on computing correct sums; A can then
// be removed and a new set of the same ranks added. Every sum is checked
// against one computed here from the members' ranks.
#include <optional>
#include <string>
#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::ProcessSet;
using ::testing::HasSubstr;

class ProcessSetFailures : public ChorusSuite {
 protected:
  std::vector<int> all() const {
    std::vector<int> ranks;
    for (int r = 0; r < size(); ++r) ranks.push_back(r);
    return ranks;
  }
  // A sum over `set` of one element per member (rank + 1), checked.
  void expect_sum_works(const ProcessSet& set, const std::vector<int>& ranks, const std::string& name) {
    bool member = false;
    for (int r : ranks) member = member || r == rank();
    if (!member) return;
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
    EXPECT_DOUBLE_EQ(x, expected) << name;
  }
};

TEST_F(ProcessSetFailures, AMemberFailsItsSetAloneAndTheOtherSetsGoOn) {
  const ProcessSet a = chorus::add_process_set({0, 1});
  const ProcessSet b = chorus::add_process_set(all());
  const std::string failure = "process set " + std::to_string(a.id) + " [0, 1] failed on rank 1: rank 1 gave up";
  // Rank 0 waits in one of A's collectives for rank 1, which never submits it.
  double stuck = 1;
  Handle waiting;
  chorus::AllreduceOptions on_a;
  on_a.process_set = a;
  if (rank() == 0) {
    waiting = submit([&] {
      return chorus::allreduce_async("a.stuck", chorus::Tensor(&stuck, chorus::DataType::kFloat64, {1}), on_a);
    });
  }
  // Meanwhile B and the global set, which hold A's ranks too, run.
  expect_sum_works(b, all(), "b.before");
  expect_sum_works(ProcessSet::global(), all(), "global.before");
  // Checked before the barrier: rank 1 may leave the barrier and fail A
  // before rank 0 leaves it.
  if (rank() == 0) {
    EXPECT_FALSE(waiting.test()) << "A's collective completed without rank 1";
  }
  test_barrier();
  if (rank() == 1) chorus::fail_process_set(a, "rank 1 gave up");
  if (rank() == 0) {
    const chorus::Status status = finish(waiting);
    EXPECT_EQ(status.code(), chorus::StatusCode::kAborted) << status.to_string();
    EXPECT_THAT(status.message(), HasSubstr("'a.stuck'"));
    EXPECT_THAT(status.message(), HasSubstr(failure));
  }
  if (rank() < 2) {
    // Every member knows who failed the set and why, and later work on it
    // fails at once (a blocking call returns).
    const std::optional<chorus::ProcessSetFailure> why = chorus::process_set_failure(a);
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(why->rank, 1);
    EXPECT_EQ(why->reason, "rank 1 gave up");
    double x = 1;
    const chorus::Status later =
        thrown_by([&] { chorus::allreduce("a.later", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), on_a); });
    EXPECT_EQ(later.code(), chorus::StatusCode::kAborted) << later.to_string();
    EXPECT_THAT(later.message(), HasSubstr("allreduce 'a.later': " + failure));
    EXPECT_THAT(thrown_by([&] { chorus::barrier(a); }).message(), HasSubstr(failure));
  }
  // B and the global set are untouched.
  expect_sum_works(b, all(), "b.after");
  expect_sum_works(ProcessSet::global(), all(), "global.after");
  EXPECT_FALSE(chorus::process_set_failure(b).has_value());
  // The failed set is removed like any other, and a new one of the same
  // ranks works, under the name that was stuck.
  chorus::remove_process_set(a);
  EXPECT_THAT(thrown_by([&] { chorus::process_set_failure(a); }).message(), HasSubstr("does not exist"));
  const ProcessSet again = chorus::add_process_set({0, 1});
  EXPECT_EQ(exchange(again.id), std::vector<int>(size(), again.id));
  EXPECT_FALSE(chorus::process_set_failure(again).has_value());
  expect_sum_works(again, {0, 1}, "a.stuck");
  chorus::remove_process_set(again);
  chorus::remove_process_set(b);
}

// A second failure does not replace the first: every member keeps the
// first rank and reason.
TEST_F(ProcessSetFailures, TheFirstFailureStands) {
  const ProcessSet a = chorus::add_process_set({0, 1});
  if (rank() == 0) chorus::fail_process_set(a, "first");
  test_barrier();
  if (rank() == 1) chorus::fail_process_set(a, "second");
  test_barrier();
  if (rank() < 2) {
    double x = 1;
    chorus::AllreduceOptions on_a;
    on_a.process_set = a;
    const chorus::Status later =
        thrown_by([&] { chorus::allreduce("late", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), on_a); });
    EXPECT_THAT(later.message(), HasSubstr("failed on rank 0: first"));
    const std::optional<chorus::ProcessSetFailure> why = chorus::process_set_failure(a);
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(why->rank, 0);
    EXPECT_EQ(why->reason, "first");
  }
  chorus::remove_process_set(a);
  expect_sum_works(ProcessSet::global(), all(), "after.two.failures");
}

// What only the caller can get wrong is refused at once, on that rank.
TEST_F(ProcessSetFailures, BadCallsAreRefusedLocally) {
  const ProcessSet solo = chorus::add_process_set({0});
  const chorus::Status global = thrown_by([] { chorus::fail_process_set(ProcessSet::global(), "x"); });
  EXPECT_EQ(global.code(), chorus::StatusCode::kInvalidArgument);
  EXPECT_THAT(global.message(), HasSubstr("the global set (id 0) cannot fail alone"));
  const chorus::Status missing = thrown_by([] { chorus::fail_process_set(ProcessSet{12345}, "x"); });
  EXPECT_EQ(missing.code(), chorus::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("process set 12345 does not exist"));
  if (rank() == 0) {
    const chorus::Status empty = thrown_by([&] { chorus::fail_process_set(solo, ""); });
    EXPECT_EQ(empty.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(empty.message(), HasSubstr("no reason given for failing process set " + std::to_string(solo.id)));
  } else {
    const chorus::Status outsider = thrown_by([&] { chorus::fail_process_set(solo, "x"); });
    EXPECT_EQ(outsider.code(), chorus::StatusCode::kInvalidArgument);
    EXPECT_THAT(outsider.message(), HasSubstr("rank " + std::to_string(rank()) + " is not in process set " +
                                              std::to_string(solo.id) + " [0]"));
  }
  // None of them failed the set.
  EXPECT_FALSE(chorus::process_set_failure(solo).has_value());
  expect_sum_works(solo, {0}, "solo.after.refusals");
  chorus::remove_process_set(solo);
}

}  // namespace
}  // namespace chorus_test
