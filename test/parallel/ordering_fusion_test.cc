// Negotiation order, fusion and the response cache: tensors submitted in a
// different order on every rank, fused vs unfused results (bit for bit), a
// cache much smaller than the working set (constant eviction), and one name
// reused step after step (the steady-state cached path), including a change
// of its shape, dtype and op under the same name.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;

constexpr uint64_t kSeed = 0x0f05;

// A buffer holding `values` in `dtype`, to compare results bit for bit where
// the reference is exact (sums of kSmall values are exact in every dtype).
Buffer exact(DataType dtype, const Shape& shape, const std::vector<double>& values) {
  Buffer b(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i) b.set(static_cast<int64_t>(i), values[i]);
  return b;
}

struct Item {
  std::string name;
  Buffer data;
  Buffer expected;
  Handle handle;
};

// The dtype, shape and op of tensor `t`: a mix, so that fusion has to group
// tensors by dtype and op.
DataType dtype_of(int t) {
  static const DataType kTypes[] = {DataType::kFloat32, DataType::kInt32, DataType::kFloat64,
                                    DataType::kInt64, DataType::kFloat16};
  return kTypes[t % 5];
}
Shape shape_of(int t) { return t % 11 == 0 ? Shape{2, 3} : Shape{1 + t % 7}; }
ReduceOp op_of(int t) { return t % 3 == 0 ? ReduceOp::kMax : ReduceOp::kSum; }

// Submits tensors `ids` (data from `round`) in the given order, waits for all,
// and checks each exactly against the reference.
void run_round(const std::vector<int>& ids, const std::vector<int>& order, int round,
               const std::string& prefix, int rank, int size) {
  std::deque<Item> items;
  for (int t : ids) {
    const auto inputs = make_inputs(dtype_of(t), shape_of(t), size, t, kSeed + static_cast<uint64_t>(round));
    Item& item = items.emplace_back();
    item.name = prefix + std::to_string(t);
    item.data = inputs[rank];
    item.expected = exact(dtype_of(t), shape_of(t), reference_reduce(inputs, op_of(t)));
  }
  for (int position : order) {
    Item& item = items[static_cast<size_t>(position)];
    AllreduceOptions options;
    options.op = op_of(ids[static_cast<size_t>(position)]);
    item.handle = submit([&] { return chorus::allreduce_async(item.name, item.data.tensor(), options); });
  }
  std::vector<chorus::Status> statuses;
  for (Item& item : items) statuses.push_back(finish(item.handle));
  int failures = 0;
  for (size_t i = 0; i < items.size() && failures < 10; ++i) {
    const bool ok = statuses[i].ok() && same_bytes(items[i].data.tensor(), items[i].expected);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "round " << round << " " << items[i].name << ": " << is_ok(statuses[i]).message()
                    << " " << same_bytes(items[i].data.tensor(), items[i].expected).message();
    }
  }
}

std::vector<int> iota_ids(int n) {
  std::vector<int> ids(static_cast<size_t>(n));
  std::iota(ids.begin(), ids.end(), 0);
  return ids;
}

// A permutation of 0..n-1 that differs per rank and per round.
std::vector<int> shuffled(int n, int rank, int round) {
  std::vector<int> order = iota_ids(n);
  std::mt19937 rng(static_cast<unsigned>(1000 * rank + round + 1));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

class Ordering : public ChorusSuite {};

TEST_F(Ordering, FiveHundredTensorsInADifferentOrderOnEveryRank) {
  run_round(iota_ids(500), shuffled(500, rank(), 0), 0, "order.", rank(), size());
}

TEST_F(Ordering, SameNameReusedAcrossStepsThenRedefined) {
  // Thirty steps of the same three names: after the first, negotiation can
  // take the cached path; the data changes every step and must be reduced
  // afresh each time.
  for (int step = 0; step < 30; ++step) run_round({3, 4, 5}, {2, 0, 1}, step, "steady.", rank(), size());
  // The same name with a new shape, dtype and op must not reuse the cached
  // response of the old definition.
  for (int step = 0; step < 3; ++step) {
    const Shape shape = {4 + step, 2};
    const DataType dtype = step == 1 ? DataType::kInt8 : DataType::kFloat64;
    const ReduceOp op = step == 2 ? ReduceOp::kMin : ReduceOp::kSum;
    const auto inputs = make_inputs(dtype, shape, size(), 100 + step, kSeed);
    Buffer data = inputs[rank()];
    AllreduceOptions options;
    options.op = op;
    Handle handle = submit([&] { return chorus::allreduce_async("steady.3", data.tensor(), options); });
    EXPECT_DONE(handle);
    EXPECT_TRUE(same_bytes(data.tensor(), exact(dtype, shape, reference_reduce(inputs, op))));
  }
}

// Tests below initialise Chorus themselves, each configuration separately.
class Configured : public ::testing::Test {};

TEST_F(Configured, CacheOfEightEntriesWithFiftyNamesOverTwentyRounds) {
  ScopedEnv env("CHORUS_CACHE_CAPACITY", "8");
  ASSERT_TRUE(init_chorus());
  const int rank = world_rank(), size = world_size();
  for (int round = 0; round < 20; ++round) {
    // Rounds alternate between the same order everywhere and per-rank
    // orders, so hits and misses interleave differently.
    const std::vector<int> order = round % 2 ? shuffled(50, rank, round) : iota_ids(50);
    run_round(iota_ids(50), order, round, "cache.", rank, size);
  }
  shutdown_chorus();
}

// Runs the same float32 workload (random values, so the result depends on
// the order of the additions) under the current environment and returns
// every output's bytes.
std::vector<std::vector<uint8_t>> fusion_workload(bool* ok) {
  const int rank = world_rank(), size = world_size();
  *ok = init_chorus();
  if (!*ok) return {};
  std::deque<Item> items;
  std::vector<std::vector<double>> expected;
  for (int t = 0; t < 40; ++t) {
    const Shape shape = {1 + (t * 131) % 3001};
    const auto inputs = make_inputs(DataType::kFloat32, shape, size, t, kSeed + 7, Values::kRandom);
    Item& item = items.emplace_back();
    item.name = "fusion." + std::to_string(t);
    item.data = inputs[rank];
    AllreduceOptions options;
    options.op = t % 2 ? ReduceOp::kAverage : ReduceOp::kSum;
    options.prescale_factor = t % 4 == 1 ? 0.5 : 1.0;
    options.postscale_factor = t % 4 == 3 ? 1.5 : 1.0;
    expected.push_back(reference_reduce(inputs, options.op, options.prescale_factor, options.postscale_factor));
    item.handle = submit([&] { return chorus::allreduce_async(item.name, item.data.tensor(), options); });
  }
  std::vector<std::vector<uint8_t>> results;
  for (size_t i = 0; i < items.size(); ++i) {
    const chorus::Status status = finish(items[i].handle);
    EXPECT_TRUE(is_ok(status)) << items[i].name;
    EXPECT_TRUE(matches(items[i].data.tensor(), expected[i])) << items[i].name;
    const auto* bytes = static_cast<const uint8_t*>(items[i].data.data());
    results.emplace_back(bytes, bytes + items[i].data.bytes());
  }
  shutdown_chorus();
  return results;
}

// Bit-for-bit equality of two float32 results; on failure says how many
// elements differ and by how much, to tell reordered additions (last-bit
// differences) from wrong data.
::testing::AssertionResult same_floats(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  if (a == b) return ::testing::AssertionSuccess();
  size_t differing = 0;
  double largest = 0.0;
  for (size_t i = 0; i + sizeof(float) <= a.size(); i += sizeof(float)) {
    float x, y;
    std::memcpy(&x, &a[i], sizeof(x));
    std::memcpy(&y, &b[i], sizeof(y));
    if (std::memcmp(&x, &y, sizeof(x)) != 0) {
      ++differing;
      largest = std::max(largest, static_cast<double>(std::fabs(x - y)));
    }
  }
  return ::testing::AssertionFailure() << differing << " of " << a.size() / sizeof(float)
                                       << " elements differ, by up to " << largest;
}

TEST_F(Configured, FusionOnAndOffGiveBitIdenticalFloat32Results) {
  std::vector<std::vector<uint8_t>> unfused, fused, partly_fused;
  bool ok = false;
  {
    ScopedEnv env("CHORUS_FUSION_THRESHOLD", "0");
    unfused = fusion_workload(&ok);
    ASSERT_TRUE(ok);
  }
  {
    ScopedEnv env("CHORUS_FUSION_THRESHOLD", nullptr);
    fused = fusion_workload(&ok);
    ASSERT_TRUE(ok);
  }
  {
    // Small enough that the 40 tensors need several fusion buffers.
    ScopedEnv env("CHORUS_FUSION_THRESHOLD", "16384");
    partly_fused = fusion_workload(&ok);
    ASSERT_TRUE(ok);
  }
  ASSERT_EQ(unfused.size(), fused.size());
  ASSERT_EQ(unfused.size(), partly_fused.size());
  for (size_t i = 0; i < unfused.size(); ++i) {
    EXPECT_TRUE(same_floats(unfused[i], fused[i])) << "fusion." << i << ": threshold 0 vs default";
    EXPECT_TRUE(same_floats(unfused[i], partly_fused[i])) << "fusion." << i << ": threshold 0 vs 16384";
  }
}

}  // namespace
}  // namespace chorus_test
