// Collectives that move data rather than reduce it: allgather (first
// dimension differing per rank, 0 rows on some ranks, bool too), broadcast
// (every root, bool too), alltoall (random splits with zeros, and equal
// parts), barrier (ordering checked through files every rank writes before
// it), and their blocking forms. Results must match support/reference byte
// for byte. Split from collectives_test.cc to keep each file readable.
#include <unistd.h>

#include <deque>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::Handle;

constexpr uint64_t kSeed = 0xda7a;

std::string dname(DataType dtype) { return chorus::dtype_name(dtype); }

// Rows that `rank` contributes to allgather case `variant`: rank 0 (and
// every third rank) has none in variant 0; variant 2 has none anywhere.
int64_t gather_rows(int rank, int variant) {
  switch (variant) {
    case 0: return rank % 3;
    case 1: return 1 + (rank * 5) % 4;
    default: return 0;
  }
}

struct Moved {
  std::string name;
  Buffer input;
  Buffer expected;
  std::vector<int64_t> expected_splits;
  Handle handle;
};

class DataMovementTest : public ChorusSuite, public ::testing::WithParamInterface<DataType> {};

TEST_P(DataMovementTest, AllgatherFirstDimensionDiffersPerRank) {
  const DataType dtype = GetParam();
  std::deque<Moved> pending;
  const std::vector<Shape> tails = {{3, 2}, {}, {5}};
  int index = 0;
  for (int variant = 0; variant < 3; ++variant) {
    for (const Shape& tail : tails) {
      std::vector<Buffer> inputs;
      for (int r = 0; r < size(); ++r) {
        Shape shape = {gather_rows(r, variant)};
        shape.insert(shape.end(), tail.begin(), tail.end());
        inputs.push_back(make_input(dtype, shape, r, index, kSeed));
      }
      Moved& m = pending.emplace_back();
      m.name = "allgather." + dname(dtype) + "." + std::to_string(index++);
      m.input = inputs[rank()];
      m.expected = reference_allgather(inputs);
      m.handle = submit([&] { return chorus::allgather_async(m.name, m.input.tensor()); });
    }
  }
  for (Moved& m : pending) {
    SCOPED_TRACE(m.name);
    const chorus::Status status = finish(m.handle);
    EXPECT_TRUE(is_ok(status));
    if (status.ok()) {
      EXPECT_TRUE(same_bytes(m.handle.output(), m.expected));
    }
  }
}

TEST_P(DataMovementTest, BroadcastFromEveryRoot) {
  const DataType dtype = GetParam();
  std::deque<Moved> pending;
  for (int root = 0; root < size(); ++root) {
    for (const Shape& shape : {Shape{4, 3}, Shape{1}, Shape{0, 2}, Shape{17}}) {
      const int index = static_cast<int>(pending.size());
      Moved& m = pending.emplace_back();
      m.name = "broadcast." + dname(dtype) + ".root" + std::to_string(root) + "." + std::to_string(index);
      // Every rank starts with different data; all must end with the root's.
      m.input = make_input(dtype, shape, rank(), index, kSeed + 1);
      m.expected = make_input(dtype, shape, root, index, kSeed + 1);
      m.handle = submit([&] { return chorus::broadcast_async(m.name, m.input.tensor(), root); });
    }
  }
  for (Moved& m : pending) {
    SCOPED_TRACE(m.name);
    EXPECT_DONE(m.handle);
    EXPECT_TRUE(same_bytes(m.input.tensor(), m.expected));
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DataMovementTest, ::testing::ValuesIn(all_dtypes()),
                         DtypeParamName());

class AlltoallTest : public ChorusSuite, public ::testing::WithParamInterface<DataType> {};

TEST_P(AlltoallTest, RandomSplitsWithZerosAndEqualParts) {
  const DataType dtype = GetParam();
  std::deque<Moved> pending;
  // Cases 0-2: random splits in [0, 3]; case 1 also has rank 0 send nothing
  // at all. Case 3: empty splits (equal parts, 2 rows per destination).
  for (int c = 0; c < 4; ++c) {
    const uint64_t seed = kSeed + 10 + static_cast<uint64_t>(c);
    std::vector<std::vector<int64_t>> splits(static_cast<size_t>(size()));
    std::vector<Buffer> inputs;
    for (int r = 0; r < size(); ++r) {
      auto& s = splits[static_cast<size_t>(r)];
      int64_t rows = 2 * size();
      if (c < 3) {
        s = alltoall_splits(r, size(), seed);
        s[static_cast<size_t>((r + 1) % size())] = 0;  // always some zeros
        if (c == 1 && r == 0) s.assign(s.size(), 0);
        rows = 0;
        for (int64_t n : s) rows += n;
      }
      inputs.push_back(make_input(dtype, {rows, 2}, r, c, seed));
    }
    const AlltoallResult expected = reference_alltoall(inputs, splits, rank());
    Moved& m = pending.emplace_back();
    m.name = "alltoall." + dname(dtype) + "." + std::to_string(c);
    m.input = inputs[rank()];
    m.expected = expected.output;
    m.expected_splits = expected.received_splits;
    const std::vector<int64_t> my_splits = splits[rank()];
    m.handle = submit([&] { return chorus::alltoall_async(m.name, m.input.tensor(), my_splits); });
  }
  for (Moved& m : pending) {
    SCOPED_TRACE(m.name);
    const chorus::Status status = finish(m.handle);
    EXPECT_TRUE(is_ok(status));
    if (!status.ok()) continue;
    EXPECT_TRUE(same_bytes(m.handle.output(), m.expected));
    EXPECT_EQ(m.handle.received_splits(), m.expected_splits);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AlltoallTest, ::testing::ValuesIn(numeric_dtypes()),
                         DtypeParamName());

class DataMovement : public ChorusSuite {};

TEST_F(DataMovement, BarrierOrdersSideEffects) {
  // Each rank writes a marker file, later the higher its rank, and checks
  // after the barrier that every rank's marker exists. Without a working
  // barrier rank 0 would look before the last rank has written.
  const std::string token = shared_token();
  auto marker = [&](int round, int r) {
    return "/tmp/" + token + ".barrier" + std::to_string(round) + "." + std::to_string(r);
  };
  for (int round = 0; round < 4; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * rank()));
    std::ofstream(marker(round, rank())) << round;
    if (round % 2 == 0) {
      EXPECT_TRUE(is_ok(thrown_by([] { chorus::barrier(); })));
    } else {
      Handle handle = submit([] { return chorus::barrier_async(); });
      EXPECT_DONE(handle);
    }
    for (int r = 0; r < size(); ++r) {
      EXPECT_TRUE(std::ifstream(marker(round, r)).good()) << "round " << round << ": rank " << r
                                                          << " had not written before the barrier";
    }
  }
  test_barrier();  // everyone has checked; now remove the markers
  for (int round = 0; round < 4; ++round) unlink(marker(round, rank()).c_str());
}

TEST_F(DataMovement, BlockingFormsAndCallerAllocatedOutput) {
  const DataType dtype = DataType::kInt32;
  // allgather into caller memory.
  std::vector<Buffer> gathered;
  for (int r = 0; r < size(); ++r) gathered.push_back(make_input(dtype, {gather_rows(r, 1), 2}, r, 0, kSeed + 20));
  Buffer ag_in = gathered[rank()];
  Buffer ag_out;
  chorus::OutputAllocator allocator = [&ag_out](const Shape& shape, DataType t, chorus::Device,
                                                 chorus::Tensor* out) {
    ag_out = Buffer(t, shape);
    *out = ag_out.tensor();
    return chorus::Status::OK();
  };
  Handle ag;
  EXPECT_TRUE(is_ok(thrown_by([&] { ag = chorus::allgather("blocking.allgather", ag_in.tensor(), allocator); })));
  if (ag.valid() && ag.test()) {
    EXPECT_EQ(ag.output().data, ag_out.data());
    EXPECT_TRUE(same_bytes(ag_out.tensor(), reference_allgather(gathered)));
  }
  // broadcast from the last rank.
  Buffer bc = make_input(dtype, {5}, rank(), 1, kSeed + 20);
  EXPECT_TRUE(is_ok(thrown_by([&] { chorus::broadcast("blocking.broadcast", bc.tensor(), size() - 1); })));
  EXPECT_TRUE(same_bytes(bc.tensor(), make_input(dtype, {5}, size() - 1, 1, kSeed + 20)));
  // alltoall with default (equal) splits.
  std::vector<Buffer> a2a;
  for (int r = 0; r < size(); ++r) a2a.push_back(make_input(dtype, {size(), 3}, r, 2, kSeed + 20));
  Buffer a2a_in = a2a[rank()];
  Handle at;
  EXPECT_TRUE(is_ok(thrown_by([&] { at = chorus::alltoall("blocking.alltoall", a2a_in.tensor()); })));
  const AlltoallResult expected = reference_alltoall(a2a, std::vector<std::vector<int64_t>>(size()), rank());
  if (at.valid() && at.test()) {
    EXPECT_TRUE(same_bytes(at.output(), expected.output));
    EXPECT_EQ(at.received_splits(), expected.received_splits);
  }
}

}  // namespace
}  // namespace chorus_test
