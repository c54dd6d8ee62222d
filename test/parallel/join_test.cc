// join(): ranks run different numbers of allreduce steps, then join. Until
// every rank has joined, a joined rank contributes zeros to the others'
// allreduces (kAverage still divides by the full world size). join() returns
// the last rank to join on every rank, and afterwards the runtime works as
// before, including a second round of joins with a different last rank.
// While ranks have joined, the others' allgather, broadcast, alltoall and
// reducescatter (grouped too) fail on every rank that submitted them, naming
// the joined ranks, instead of waiting; barriers and timeline control go on.
#include <cstdio>
#include <deque>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/chrome_trace.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;

constexpr uint64_t kSeed = 0x1017;

struct Case {
  DataType dtype;
  ReduceOp op;
};

// Sum and Average for every numeric dtype; Min, Max and Product for two, where
// the zeros of a joined rank visibly change the result; float32 Sum and
// Average twice, so some fused units hold several tensors.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (DataType dtype : numeric_dtypes()) {
    out.push_back({dtype, ReduceOp::kSum});
    out.push_back({dtype, ReduceOp::kAverage});
  }
  for (DataType dtype : {DataType::kFloat32, DataType::kInt32}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) out.push_back({dtype, op});
  }
  // Fused units of several tensors with zeros from a joined rank.
  out.push_back({DataType::kFloat32, ReduceOp::kAverage});
  out.push_back({DataType::kFloat32, ReduceOp::kSum});
  return out;
}

// Round 0: rank r runs 3 + r steps (the last rank joins last). Round 1: the
// reverse, so rank 0 joins last.
int steps_of(int round, int rank, int size) { return round == 0 ? 3 + rank : 2 + (size - 1 - rank); }
int last_to_join(int round, int size) { return round == 0 ? size - 1 : 0; }

struct Step {
  std::string name;
  Buffer data;
  std::vector<double> expected;
  Handle handle;
};

class Join : public ChorusSuite {
 protected:
  // Runs this rank's steps of `round`, checking every result against the
  // reference in which ranks that have no step `s` contribute zeros.
  void run_steps(int round) {
    const std::vector<Case> all = cases();
    for (int s = 0; s < steps_of(round, rank(), size()); ++s) {
      std::deque<Step> steps;
      for (size_t c = 0; c < all.size(); ++c) {
        const Case& k = all[c];
        const Shape shape = {3 + static_cast<int64_t>(c % 3), 2};
        const Values values = k.op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
        std::vector<Buffer> inputs =
            make_inputs(k.dtype, shape, size(), static_cast<int>(c), kSeed + 100 * round + s, values);
        for (int r = 0; r < size(); ++r) {
          if (s >= steps_of(round, r, size())) inputs[r] = Buffer(k.dtype, shape);  // joined: zeros
        }
        Step& step = steps.emplace_back();
        step.name = "join" + std::to_string(round) + ".step" + std::to_string(s) + "." +
                    chorus::dtype_name(k.dtype) + "." + chorus::reduce_op_name(k.op) + "." + std::to_string(c);
        step.data = inputs[rank()];
        step.expected = reference_reduce(inputs, k.op, 1.0, 1.0, size());
        AllreduceOptions options;
        options.op = k.op;
        step.handle = submit([&] { return chorus::allreduce_async(step.name, step.data.tensor(), options); });
      }
      std::vector<chorus::Status> statuses;
      for (Step& step : steps) statuses.push_back(finish(step.handle));
      for (size_t i = 0; i < steps.size(); ++i) {
        SCOPED_TRACE(steps[i].name);
        EXPECT_TRUE(is_ok(statuses[i]));
        if (statuses[i].ok()) {
          EXPECT_TRUE(matches(steps[i].data.tensor(), steps[i].expected));
        }
      }
    }
  }

  // Joins through join() on even ranks and join_async() on odd ones, so
  // both forms are checked; returns the last joined rank (-1 on failure).
  int join_now() {
    if (rank() % 2 == 0) {
      // join() has no timeout: run it on a thread so that a join that never
      // completes fails the test instead of hanging the binary. If it times
      // out, the suite's shutdown() fails the pending join and ends the thread.
      struct Result {
        chorus::Status status;
        int last = -1;
      };
      auto promise = std::make_shared<std::promise<Result>>();
      std::future<Result> future = promise->get_future();
      std::thread joiner([promise] {
        Result result;
        result.status = thrown_by([&] { result.last = chorus::join(); });
        promise->set_value(result);
      });
      if (future.wait_for(kWaitTimeout) != std::future_status::ready) {
        joiner.detach();
        ADD_FAILURE() << "join() did not return within " << kWaitTimeout.count() << " ms";
        return -1;
      }
      joiner.join();
      const Result result = future.get();
      EXPECT_TRUE(is_ok(result.status));
      return result.last;
    }
    Handle handle = submit([] { return chorus::join_async(); });
    const chorus::Status status = finish(handle);
    EXPECT_TRUE(is_ok(status));
    return status.ok() ? handle.last_joined_rank() : -1;
  }

  // Collectives of every kind after a join: the runtime is back to normal.
  void expect_usable_after_join(int round) {
    const std::string prefix = "after_join" + std::to_string(round) + ".";
    const auto inputs = make_inputs(DataType::kFloat32, {4, 2}, size(), 0, kSeed + 7 + round);
    Buffer mine = inputs[rank()];
    Handle reduce = submit([&] { return chorus::allreduce_async(prefix + "allreduce", mine.tensor()); });
    EXPECT_DONE(reduce);
    EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kAverage)));

    Buffer gathered = inputs[rank()];
    Handle gather = submit([&] { return chorus::allgather_async(prefix + "allgather", gathered.tensor()); });
    const chorus::Status status = finish(gather);
    EXPECT_TRUE(is_ok(status));
    if (status.ok()) {
      EXPECT_TRUE(same_bytes(gather.output(), reference_allgather(inputs)));
    }

    Buffer broadcasted = inputs[rank()];
    Handle bcast = submit([&] { return chorus::broadcast_async(prefix + "broadcast", broadcasted.tensor(), 0); });
    EXPECT_DONE(bcast);
    EXPECT_TRUE(same_bytes(broadcasted.tensor(), inputs[0]));
  }
};

TEST_F(Join, UnevenStepsThenJoinReturnsTheLastRankEverywhere) {
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    run_steps(round);
    const int last = join_now();
    EXPECT_EQ(last, last_to_join(round, size()));
    // After a failed join the runtime's state is unknown; waiting for more
    // collectives would only add timeouts.
    if (last < 0) return;
    expect_usable_after_join(round);
  }
}

// The error of a collective that the ranks in `joined` (ascending) did not
// submit because they had joined (docs/CONVENTIONS.md).
std::string joined_error(const std::string& op, const std::string& name, const std::vector<int>& joined) {
  std::string who;
  if (joined.size() == 1) {
    who = "rank " + std::to_string(joined[0]) + " has";
  } else {
    who = "ranks [";
    for (size_t i = 0; i < joined.size(); ++i) who += (i ? ", " : "") + std::to_string(joined[i]);
    who += "] have";
  }
  return op + " '" + name + "' cannot run while " + who +
         " joined: a joined rank takes part only in allreduces (contributing zeros), barriers and timeline "
         "control; run it on every rank before join(), or after join() has returned";
}

// Long enough for a collective that fails at once; a runtime that waits for
// the joined ranks instead fails the test after it.
constexpr std::chrono::milliseconds kFailWithin{20000};

class JoinedRanks : public Join {
 protected:
  // The collectives that cannot run without the joined ranks, under fixed
  // names (so that after the first run they are response cache hits):
  // with `joined` empty every rank takes part and each result is checked
  // against the reference; otherwise each fails with the joined error.
  void run_data_collectives(const std::vector<int>& joined, uint64_t seed) {
    const int n = size();
    const std::vector<Buffer> gather_inputs = make_inputs(DataType::kFloat32, {3, 2}, n, 1, seed);
    const std::vector<Buffer> bcast_inputs = make_inputs(DataType::kInt32, {5}, n, 2, seed);
    const std::vector<Buffer> a2a_inputs = make_inputs(DataType::kFloat64, {2 * n, 3}, n, 3, seed);
    const std::vector<Buffer> scatter_inputs = make_inputs(DataType::kFloat32, {2 * n + 1, 2}, n, 4, seed);
    Buffer gather = gather_inputs[rank()], bcast = bcast_inputs[rank()], a2a = a2a_inputs[rank()];
    Buffer scatter = scatter_inputs[rank()], member0 = gather_inputs[rank()], member1 = scatter_inputs[rank()];
    struct Op {
      std::string op, name;
      Handle handle;
    };
    std::vector<Op> ops;
    ops.push_back({"allgather", "joined.allgather",
                   submit([&] { return chorus::allgather_async("joined.allgather", gather.tensor()); })});
    ops.push_back({"broadcast", "joined.broadcast",
                   submit([&] { return chorus::broadcast_async("joined.broadcast", bcast.tensor(), 0); })});
    ops.push_back({"alltoall", "joined.alltoall",
                   submit([&] { return chorus::alltoall_async("joined.alltoall", a2a.tensor()); })});
    ops.push_back({"reducescatter", "joined.reducescatter",
                   submit([&] { return chorus::reducescatter_async("joined.reducescatter", scatter.tensor()); })});
    // A group fails as a whole (its first member's error).
    ops.push_back({"allgather", "joined.group.0", submit([&] {
                     return chorus::grouped_allgather_async("joined.group", {member0.tensor(), member1.tensor()});
                   })});
    std::vector<chorus::Status> statuses;
    for (Op& op : ops) statuses.push_back(finish(op.handle, joined.empty() ? kWaitTimeout : kFailWithin));
    for (size_t i = 0; i < ops.size(); ++i) {
      SCOPED_TRACE(ops[i].name);
      if (!joined.empty()) {
        EXPECT_EQ(statuses[i].code(), chorus::StatusCode::kPreconditionFailed) << statuses[i].message();
        EXPECT_EQ(statuses[i].message(), joined_error(ops[i].op, ops[i].name, joined));
        continue;
      }
      EXPECT_TRUE(is_ok(statuses[i]));
    }
    if (!joined.empty() || ::testing::Test::HasFailure()) return;
    EXPECT_TRUE(same_bytes(ops[0].handle.output(), reference_allgather(gather_inputs)));
    EXPECT_TRUE(same_bytes(bcast.tensor(), bcast_inputs[0]));
    EXPECT_TRUE(same_bytes(ops[2].handle.output(),
                           reference_alltoall(a2a_inputs, std::vector<std::vector<int64_t>>(n), rank()).output));
    EXPECT_TRUE(matches(ops[3].handle.output(), reference_reducescatter(scatter_inputs, ReduceOp::kSum, rank())));
    const std::vector<chorus::Tensor> members = ops[4].handle.outputs();
    ASSERT_EQ(members.size(), 2u);
    EXPECT_TRUE(same_bytes(members[0], reference_allgather(gather_inputs)));
    EXPECT_TRUE(same_bytes(members[1], reference_allgather(scatter_inputs)));
  }

  // An average over every rank to which the ranks from `first_joined` on
  // contribute zeros, under a fixed name (a cache hit after the first).
  void run_allreduce(int first_joined, uint64_t seed) {
    std::vector<Buffer> inputs = make_inputs(DataType::kFloat32, {6}, size(), 5, seed);
    for (int r = first_joined; r < size(); ++r) inputs[r] = Buffer(DataType::kFloat32, {6});
    Buffer mine = inputs[rank()];
    Handle handle = submit([&] { return chorus::allreduce_async("joined.average", mine.tensor()); });
    EXPECT_DONE(handle);
    EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kAverage, 1.0, 1.0, size())));
  }
};

TEST_F(JoinedRanks, OtherCollectivesFailNamingThemAllreducesAverageTheirZeros) {
  const int n = size();
  // Every rank takes part once: the names are cached from here on.
  run_data_collectives({}, kSeed);
  run_allreduce(n, kSeed);
  const std::string trace = temp_dir() + "/" + shared_token() + ".joined.timeline.json";

  // The ranks join one at a time, the last one first; rank 0 joins last.
  Handle my_join;
  for (int k = 1; k < n; ++k) {
    const int joining = n - k;
    SCOPED_TRACE("ranks " + std::to_string(joining) + " and up have joined");
    if (rank() == joining) my_join = submit([] { return chorus::join_async(); });
    test_barrier();
    if (rank() < joining) {
      std::vector<int> joined;
      for (int r = joining; r < n; ++r) joined.push_back(r);
      run_data_collectives(joined, kSeed + k);
      run_allreduce(joining, kSeed + k);
      // Barriers go on without the joined ranks.
      EXPECT_TRUE(is_ok(thrown_by([] { chorus::barrier(); })));
      if (k == 1) {
        // So does timeline control; rank 0's trace holds what ran between.
        EXPECT_TRUE(is_ok(thrown_by([&] { chorus::start_timeline(trace); })));
        run_allreduce(joining, kSeed + 100);
        EXPECT_TRUE(is_ok(thrown_by([] { chorus::stop_timeline(); })));
        if (rank() == 0) {
          const std::string text = read_file(trace);
          EXPECT_EQ(activities(parse_trace(text), "joined.average"),
                    (std::multiset<std::string>{"NEGOTIATE_ALLREDUCE", "WAIT_FOR_OTHER_COLLECTIVES", "ALLREDUCE"}))
              << text;
          std::remove(trace.c_str());
        }
      }
    }
    test_barrier();
  }
  int last = -1;
  if (rank() == 0) {
    last = chorus::join();
  } else {
    const chorus::Status joined = finish(my_join);
    EXPECT_TRUE(is_ok(joined));
    if (joined.ok()) last = my_join.last_joined_rank();
  }
  EXPECT_EQ(last, 0);
  // Everyone has joined: every collective runs again, and so do barriers
  // (the joined ranks took part in the others' without calling them).
  run_data_collectives({}, kSeed + 1000);
  run_allreduce(n, kSeed + 1000);
  EXPECT_TRUE(is_ok(thrown_by([] { chorus::barrier(); })));
  expect_usable_after_join(3);
}

// Ranks that skipped different unnamed ops (as around a join) give later
// ones different names: while a rank has joined, each other rank's
// collective fails at once rather than waiting for the others to ask for
// the same name, which they never will.
TEST_F(JoinedRanks, CollectivesUnderEachRanksOwnNameFailAtOnce) {
  const int joining = size() - 1;
  Handle my_join;
  if (rank() == joining) my_join = submit([] { return chorus::join_async(); });
  test_barrier();
  if (rank() != joining) {
    const std::vector<Buffer> inputs = make_inputs(DataType::kFloat32, {3}, size(), 6, kSeed);
    Buffer mine = inputs[rank()];
    const std::string name = "joined.only." + std::to_string(rank());
    Handle gather = submit([&] { return chorus::allgather_async(name, mine.tensor()); });
    const chorus::Status status = finish(gather, kFailWithin);
    EXPECT_EQ(status.code(), chorus::StatusCode::kPreconditionFailed) << status.message();
    EXPECT_EQ(status.message(), joined_error("allgather", name, {joining}));
  }
  test_barrier();
  int last = -1;
  if (rank() == joining) {
    const chorus::Status joined = finish(my_join);
    EXPECT_TRUE(is_ok(joined));
    if (joined.ok()) last = my_join.last_joined_rank();
  } else {
    last = join_now();
  }
  const std::vector<int> everyone = exchange(last);
  for (int r = 0; r < size(); ++r) EXPECT_EQ(everyone[static_cast<size_t>(r)], last) << "rank " << r;
  expect_usable_after_join(4);
}

TEST_F(Join, EveryRankJoinsWithoutSteps) {
  // Nobody has data: join completes at once with some rank as the last,
  // the same one on every rank.
  const int last = join_now();
  EXPECT_GE(last, 0);
  EXPECT_LT(last, size());
  const std::vector<int> everyone = exchange(last);
  for (int r = 0; r < size(); ++r) EXPECT_EQ(everyone[static_cast<size_t>(r)], last) << "rank " << r;
  if (last >= 0) expect_usable_after_join(2);
}

}  // namespace
}  // namespace chorus_test
