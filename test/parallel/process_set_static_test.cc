// Process sets given to init(): created on every rank in order with ids
// 1..n, usable at once; and init() with lists that are bad on every rank
// fails (and leaves Chorus uninitialised, so a later init() works).
#include <algorithm>
#include <string>
#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::ProcessSet;

std::vector<int> everyone_but_zero(int size) {
  std::vector<int> out;
  for (int r = 1; r < size; ++r) out.push_back(r);
  return out;
}

TEST(StaticProcessSets, InitCreatesThemInOrder) {
  chorus::InitOptions options;
  options.process_sets = {{1, 0}, everyone_but_zero(world_size())};
  ASSERT_TRUE(is_ok(thrown_by([&] { chorus::init(options); })));
  const std::vector<ProcessSet> sets = chorus::process_sets();
  ASSERT_EQ(sets.size(), 3u);
  EXPECT_EQ(sets[0].id, 0);
  EXPECT_EQ(sets[1].id, 1);
  EXPECT_EQ(sets[2].id, 2);
  EXPECT_EQ(chorus::process_set_ranks(sets[1]), (std::vector<int>{0, 1}));
  EXPECT_EQ(chorus::process_set_ranks(sets[2]), everyone_but_zero(world_size()));
  // An average over set 2: divides by its size, not the job's.
  const std::vector<int> members = everyone_but_zero(world_size());
  if (world_rank() != 0) {
    double x = 10.0 * world_rank();
    chorus::AllreduceOptions average;
    average.process_set = sets[2];
    EXPECT_TRUE(is_ok(thrown_by(
        [&] { chorus::allreduce("static.avg", chorus::Tensor(&x, chorus::DataType::kFloat64, {1}), average); })));
    double expected = 0;
    for (int r : members) expected += 10.0 * r;
    EXPECT_DOUBLE_EQ(x, expected / static_cast<double>(members.size()));
  }
  test_barrier();
  shutdown_chorus();
}

TEST(StaticProcessSets, BadListsFailInit) {
  chorus::InitOptions options;
  options.process_sets = {{0, 0}};
  const chorus::Status status = thrown_by([&] { chorus::init(options); });
  EXPECT_EQ(status.code(), chorus::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), ::testing::HasSubstr("static process sets"));
  EXPECT_THAT(status.message(), ::testing::HasSubstr("rank 0 twice"));
  EXPECT_FALSE(chorus::is_initialized());
  // A later init() starts afresh: ids from 1 again.
  options.process_sets = {{0, 1}};
  ASSERT_TRUE(is_ok(thrown_by([&] { chorus::init(options); })));
  EXPECT_EQ(chorus::process_sets().back().id, 1);
  test_barrier();
  shutdown_chorus();
}

}  // namespace
}  // namespace chorus_test
