// Process sets (process_set.h): collectives of every kind on overlapping and
// disjoint sets and the global set at the same time, submitted in different
// orders on different ranks, with the same names in several sets; fusion
// within a set; adding and removing sets many times. Every expected value is
// computed here from the members' ranks alone (process_set_errors_test.cc
// has the error cases, process_set_static_test.cc the sets of init()).
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/harness.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::ProcessSet;

// The sets of this job: at np 4 {0, 1}, {2, 3}, {1, 2, 3}, {0, 2} (two
// disjoint, the others overlapping them), fewer distinct ones at np 2 and 3.
std::vector<std::vector<int>> set_lists(int size) {
  std::vector<int> tail, even;
  for (int r = 1; r < size; ++r) tail.push_back(r);
  for (int r = 0; r < size; r += 2) even.push_back(r);
  return {{0, 1}, {size - 2, size - 1}, tail, even};
}

// Value of element i of tensor `tag` on job rank r: exact in float64 sums.
double value(int r, int tag, int64_t i) { return (r + 1) * 100.0 + tag * 7.0 + static_cast<double>(i) * 0.5; }

struct Doubles {
  std::vector<double> data;
  chorus::Tensor tensor(chorus::Shape shape) { return chorus::Tensor(data.data(), chorus::DataType::kFloat64, shape); }
};

// One collective in flight: its handle and the check of its result.
struct Pending {
  std::string what;
  Handle handle;
  std::function<void(const Handle&)> check;
  std::shared_ptr<Doubles> keep;  // memory that must outlive the handle
};

void expect_values(const std::string& what, const double* got, const std::vector<double>& expected) {
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_DOUBLE_EQ(got[i], expected[i]) << what << " element " << i;
  }
}

class ProcessSets : public ChorusSuite {
 protected:
  // Submits one of every collective on `set` (members `ranks`) under names
  // shared by every set, so the same name is in flight in several at once.
  void submit_all(const ProcessSet& set, const std::vector<int>& ranks, int tag, std::vector<Pending>* out) {
    const int me = rank();
    const int n = static_cast<int>(ranks.size());
    const int sr = static_cast<int>(std::find(ranks.begin(), ranks.end(), me) - ranks.begin());
    ASSERT_EQ(chorus::process_set_rank(set), sr);
    ASSERT_EQ(chorus::process_set_size(set), n);
    const std::string where = " on set " + std::to_string(set.id);
    constexpr int64_t kElems = 5;

    {  // allreduce, sum
      auto buf = std::make_shared<Doubles>();
      for (int64_t i = 0; i < kElems; ++i) buf->data.push_back(value(me, tag, i));
      std::vector<double> expected(kElems, 0.0);
      for (int r : ranks) {
        for (int64_t i = 0; i < kElems; ++i) expected[i] += value(r, tag, i);
      }
      chorus::AllreduceOptions options;
      options.op = chorus::ReduceOp::kSum;
      options.process_set = set;
      Handle h = submit([&] { return chorus::allreduce_async("t.sum", buf->tensor({kElems}), options); });
      out->push_back({"allreduce sum" + where, h, [buf, expected](const Handle&) {
                        expect_values("allreduce sum", buf->data.data(), expected);
                      }, buf});
    }
    {  // allreduce, average: divides by the set's size
      auto buf = std::make_shared<Doubles>();
      for (int64_t i = 0; i < kElems; ++i) buf->data.push_back(value(me, tag + 1, i));
      std::vector<double> expected(kElems, 0.0);
      for (int r : ranks) {
        for (int64_t i = 0; i < kElems; ++i) expected[i] += value(r, tag + 1, i) / n;
      }
      chorus::AllreduceOptions options;
      options.process_set = set;
      Handle h = submit([&] { return chorus::allreduce_async("t.avg", buf->tensor({kElems}), options); });
      out->push_back({"allreduce average" + where, h, [buf, expected](const Handle&) {
                        for (size_t i = 0; i < expected.size(); ++i) {
                          ASSERT_NEAR(buf->data[i], expected[i], 1e-9) << "allreduce average element " << i;
                        }
                      }, buf});
    }
    {  // allgather: set rank s brings s + 1 rows, concatenated by set rank
      auto buf = std::make_shared<Doubles>();
      for (int64_t i = 0; i <= sr; ++i) buf->data.push_back(value(me, tag + 2, i));
      std::vector<double> expected;
      for (int s = 0; s < n; ++s) {
        for (int64_t i = 0; i <= s; ++i) expected.push_back(value(ranks[s], tag + 2, i));
      }
      Handle h = submit([&] {
        return chorus::allgather_async("t.gather", buf->tensor({sr + 1}), nullptr, set);
      });
      out->push_back({"allgather" + where, h, [expected](const Handle& done) {
                        const chorus::Tensor got = done.output();
                        ASSERT_EQ(got.shape, (chorus::Shape{static_cast<int64_t>(expected.size())}));
                        expect_values("allgather", static_cast<const double*>(got.data), expected);
                      }, buf});
    }
    {  // broadcast from the set's last member (a job rank)
      const int root = ranks.back();
      auto buf = std::make_shared<Doubles>();
      std::vector<double> expected;
      for (int64_t i = 0; i < kElems; ++i) {
        buf->data.push_back(value(me, tag + 3, i));
        expected.push_back(value(root, tag + 3, i));
      }
      Handle h = submit([&] { return chorus::broadcast_async("t.bcast", buf->tensor({kElems}), root, set); });
      out->push_back({"broadcast" + where, h, [buf, expected](const Handle&) {
                        expect_values("broadcast", buf->data.data(), expected);
                      }, buf});
    }
    {  // alltoall: set rank s sends 1 + (s + j) % 2 rows to set rank j
      const auto splits_of = [n](int s) {
        std::vector<int64_t> splits;
        for (int j = 0; j < n; ++j) splits.push_back(1 + (s + j) % 2);
        return splits;
      };
      const std::vector<int64_t> splits = splits_of(sr);
      auto buf = std::make_shared<Doubles>();
      int64_t rows = 0;
      for (int64_t k : splits) rows += k;
      for (int64_t q = 0; q < rows; ++q) buf->data.push_back(me * 1000.0 + tag + q);
      std::vector<double> expected;
      for (int s = 0; s < n; ++s) {
        const std::vector<int64_t> theirs = splits_of(s);
        int64_t offset = 0;
        for (int j = 0; j < sr; ++j) offset += theirs[j];
        for (int64_t q = 0; q < theirs[sr]; ++q) expected.push_back(ranks[s] * 1000.0 + tag + offset + q);
      }
      Handle h = submit([&] {
        return chorus::alltoall_async("t.alltoall", buf->tensor({rows}), splits, nullptr, set);
      });
      out->push_back({"alltoall" + where, h, [expected](const Handle& done) {
                        const chorus::Tensor got = done.output();
                        ASSERT_EQ(got.shape, (chorus::Shape{static_cast<int64_t>(expected.size())}));
                        expect_values("alltoall", static_cast<const double*>(got.data), expected);
                      }, buf});
    }
    {  // reducescatter: 2n + 1 rows, parted by set rank
      const int64_t rows = 2 * n + 1;
      auto buf = std::make_shared<Doubles>();
      for (int64_t i = 0; i < rows; ++i) buf->data.push_back(value(me, tag + 4, i));
      const int64_t begin = sr * (rows / n) + std::min<int64_t>(sr, rows % n);
      const int64_t count = rows / n + (sr < rows % n ? 1 : 0);
      std::vector<double> expected(static_cast<size_t>(count), 0.0);
      for (int r : ranks) {
        for (int64_t i = 0; i < count; ++i) expected[static_cast<size_t>(i)] += value(r, tag + 4, begin + i);
      }
      Handle h = submit([&] {
        return chorus::reducescatter_async("t.scatter", buf->tensor({rows}), chorus::ReduceOp::kSum, nullptr, set);
      });
      out->push_back({"reducescatter" + where, h, [expected](const Handle& done) {
                        const chorus::Tensor got = done.output();
                        ASSERT_EQ(got.shape, (chorus::Shape{static_cast<int64_t>(expected.size())}));
                        expect_values("reducescatter", static_cast<const double*>(got.data), expected);
                      }, buf});
    }
    Handle barrier = submit([&] { return chorus::barrier_async(set); });
    out->push_back({"barrier" + where, barrier, [](const Handle&) {}, nullptr});
  }

  static void finish_all(std::vector<Pending>* pending) {
    for (Pending& p : *pending) {
      SCOPED_TRACE(p.what);
      const chorus::Status status = finish(p.handle);
      EXPECT_TRUE(is_ok(status));
      if (status.ok()) p.check(p.handle);
    }
  }
};

TEST_F(ProcessSets, EveryCollectiveOnOverlappingAndDisjointSetsAtOnce) {
  std::vector<ProcessSet> sets;
  std::vector<std::vector<int>> lists = set_lists(size());
  for (const auto& ranks : lists) sets.push_back(chorus::add_process_set(ranks));
  // The same ids on every rank.
  for (const ProcessSet& set : sets) EXPECT_EQ(exchange(set.id), std::vector<int>(size(), set.id));
  std::vector<int> all;
  for (int r = 0; r < size(); ++r) all.push_back(r);
  sets.push_back(ProcessSet::global());
  lists.push_back(all);

  for (int round = 0; round < 3; ++round) {
    // Each rank submits its sets in its own order (rotated by rank and
    // round), all before waiting for any.
    std::vector<size_t> order;
    for (size_t i = 0; i < sets.size(); ++i) order.push_back((i + rank() + round) % sets.size());
    std::vector<Pending> pending;
    for (size_t i : order) {
      const auto& ranks = lists[i];
      if (!std::binary_search(ranks.begin(), ranks.end(), rank())) {
        EXPECT_EQ(chorus::process_set_rank(sets[i]), -1);
        continue;
      }
      submit_all(sets[i], ranks, static_cast<int>(10 * i + round), &pending);
    }
    finish_all(&pending);
  }
  for (size_t i = 0; i + 1 < sets.size(); ++i) chorus::remove_process_set(sets[i]);
}

TEST_F(ProcessSets, ManySmallTensorsFuseWithinTheirSet) {
  // Two sets and the global set, each with 40 small allreduces of the same
  // names submitted in one burst: fused within each set, never across.
  std::vector<std::vector<int>> lists = {{0, 1}, set_lists(size())[2]};
  std::vector<ProcessSet> sets;
  for (const auto& ranks : lists) sets.push_back(chorus::add_process_set(ranks));
  std::vector<int> all;
  for (int r = 0; r < size(); ++r) all.push_back(r);
  sets.push_back(ProcessSet::global());
  lists.push_back(all);
  constexpr int kTensors = 40;
  std::vector<Pending> pending;
  for (size_t k = 0; k < sets.size(); ++k) {
    const auto& ranks = lists[k];
    if (!std::binary_search(ranks.begin(), ranks.end(), rank())) continue;
    for (int t = 0; t < kTensors; ++t) {
      auto buf = std::make_shared<Doubles>();
      const int tag = 1000 + 50 * static_cast<int>(k) + t;
      for (int64_t i = 0; i < 3; ++i) buf->data.push_back(value(rank(), tag, i));
      std::vector<double> expected(3, 0.0);
      for (int r : ranks) {
        for (int64_t i = 0; i < 3; ++i) expected[i] += value(r, tag, i);
      }
      chorus::AllreduceOptions options;
      options.op = chorus::ReduceOp::kSum;
      options.process_set = sets[k];
      Handle h = submit([&] {
        return chorus::allreduce_async("fuse." + std::to_string(t), buf->tensor({3}), options);
      });
      pending.push_back({"fuse." + std::to_string(t) + " on set " + std::to_string(sets[k].id), h,
                         [buf, expected](const Handle&) { expect_values("fused", buf->data.data(), expected); },
                         buf});
    }
  }
  finish_all(&pending);
  chorus::remove_process_set(sets[0]);
  chorus::remove_process_set(sets[1]);
}

TEST_F(ProcessSets, AddAndRemoveManyTimes) {
  int last_id = 0;
  for (int i = 0; i < 25; ++i) {
    // Alternately a pair and everyone but one rank.
    std::vector<int> ranks;
    for (int r = 0; r < size(); ++r) {
      if (i % 2 == 0 ? (r == i % size() || r == (i + 1) % size()) : r != i % size()) ranks.push_back(r);
    }
    std::sort(ranks.begin(), ranks.end());
    const ProcessSet set = chorus::add_process_set(ranks);
    EXPECT_GT(set.id, last_id);
    last_id = set.id;
    EXPECT_EQ(exchange(set.id), std::vector<int>(size(), set.id));
    EXPECT_EQ(chorus::process_set_ranks(set), ranks);
    if (std::binary_search(ranks.begin(), ranks.end(), rank())) {
      Doubles buf{{static_cast<double>(rank() + i)}};
      chorus::AllreduceOptions options;
      options.op = chorus::ReduceOp::kSum;
      options.process_set = set;
      Handle h = submit([&] { return chorus::allreduce_async("again", buf.tensor({1}), options); });
      EXPECT_DONE(h);
      double expected = 0;
      for (int r : ranks) expected += r + i;
      EXPECT_DOUBLE_EQ(buf.data[0], expected);
    }
    chorus::remove_process_set(set);
    const auto ids = chorus::process_sets();
    EXPECT_EQ(ids.size(), 1u);
  }
}

}  // namespace
}  // namespace chorus_test
