// Error handling through the public API, asserted on every rank: use before
// init() and after shutdown(), bad CHORUS_* values, ranks that disagree about
// a collective (docs/CONVENTIONS.md messages), a name already in flight, and
// invalid arguments. After each failure the runtime must stay usable.
// Peer shutdown and the stall inspector are in errors_shutdown_test.cc.
#include <cctype>
#include <cmath>
#include <limits>
#include <functional>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using chorus::StatusCode;
using ::testing::ContainsRegex;
using ::testing::MatchesRegex;

constexpr uint64_t kSeed = 0xe770;

// What a call did: the chorus::Error it threw, or else its handle's status.
chorus::Status outcome(const std::function<Handle()>& call) {
  Handle handle;
  const chorus::Status thrown = thrown_by([&] { handle = call(); });
  if (!thrown.ok()) return thrown;
  return finish(handle, std::chrono::seconds(30));
}

// Every API entry point except init/shutdown/is_initialized, each with
// arguments that would be valid after init().
std::vector<std::pair<std::string, std::function<void()>>> every_call() {
  static float data[4] = {1, 2, 3, 4};
  static float out[4];
  const chorus::Tensor t(data, DataType::kFloat32, {4});
  const chorus::Tensor o(out, DataType::kFloat32, {4});
  return {
      {"rank", [] { (void)chorus::rank(); }},
      {"size", [] { (void)chorus::size(); }},
      {"local_rank", [] { (void)chorus::local_rank(); }},
      {"local_size", [] { (void)chorus::local_size(); }},
      {"cross_rank", [] { (void)chorus::cross_rank(); }},
      {"cross_size", [] { (void)chorus::cross_size(); }},
      {"allreduce_async", [t] { (void)chorus::allreduce_async("life.a", t); }},
      {"allreduce_async out", [t, o] { (void)chorus::allreduce_async("life.b", t, o); }},
      {"grouped_allreduce_async", [t, o] { (void)chorus::grouped_allreduce_async("life.c", {t}, {o}); }},
      {"allgather_async", [t] { (void)chorus::allgather_async("life.d", t); }},
      {"broadcast_async", [t] { (void)chorus::broadcast_async("life.e", t, 0); }},
      {"alltoall_async", [t] { (void)chorus::alltoall_async("life.f", t); }},
      {"reducescatter_async", [t] { (void)chorus::reducescatter_async("life.g", t); }},
      {"barrier_async", [] { (void)chorus::barrier_async(); }},
      {"join_async", [] { (void)chorus::join_async(); }},
      {"allreduce", [t] { chorus::allreduce("life.h", t); }},
      {"grouped_allreduce", [t, o] { chorus::grouped_allreduce("life.i", {t}, {o}); }},
      {"allgather", [t] { (void)chorus::allgather("life.j", t); }},
      {"broadcast", [t] { chorus::broadcast("life.k", t, 0); }},
      {"alltoall", [t] { (void)chorus::alltoall("life.l", t); }},
      {"reducescatter", [t] { (void)chorus::reducescatter("life.m", t); }},
      {"barrier", [] { chorus::barrier(); }},
      {"join", [] { (void)chorus::join(); }},
  };
}

void expect_every_call_throws(const std::string& message) {
  for (const auto& [name, call] : every_call()) {
    const chorus::Status status = thrown_by(call);
    EXPECT_FALSE(status.ok()) << name << " did not throw";
    EXPECT_EQ(status.message(), message) << name;
  }
}

// A Sum allreduce whose result is checked: the runtime still works.
void expect_usable(const std::string& name) {
  const auto inputs = make_inputs(DataType::kInt32, {5}, world_size(), 0, kSeed);
  Buffer mine = inputs[world_rank()];
  AllreduceOptions options;
  options.op = ReduceOp::kSum;
  const chorus::Status status = outcome([&] { return chorus::allreduce_async(name, mine.tensor(), options); });
  EXPECT_TRUE(is_ok(status)) << "runtime unusable after an error";
  EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
}

TEST(Lifecycle, EveryCallBeforeInitThrows) {
  if (init_attempted()) GTEST_SKIP() << "init() already ran in this process";
  EXPECT_FALSE(chorus::is_initialized());
  expect_every_call_throws("Chorus is not initialized: call chorus::init() first");
  const chorus::Status status = thrown_by([] { (void)chorus::rank(); });
  EXPECT_EQ(status.code(), StatusCode::kPreconditionFailed);
}

TEST(Lifecycle, BadEnvironmentValueFailsInitNamingTheVariable) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"CHORUS_FUSION_THRESHOLD", "-5"},     {"CHORUS_CACHE_CAPACITY", "many"},
      {"CHORUS_CYCLE_TIME_MS", "20000"},     {"CHORUS_STALL_CHECK_SECONDS", "1s"},
      {"CHORUS_STALL_SHUTDOWN_SECONDS", "nan"}, {"CHORUS_LOG_LEVEL", "loud"},
  };
  for (const auto& [variable, value] : bad) {
    ScopedEnv env({{variable, value.c_str()}});
    const chorus::Status status = thrown_by([] { chorus::init(); });
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << variable;
    EXPECT_THAT(status.message(), ::testing::StartsWith(variable + "='" + value + "' is invalid: expected "));
    EXPECT_FALSE(chorus::is_initialized()) << variable;
    if (chorus::is_initialized()) shutdown_chorus();
  }
  // With the environment fixed, init() works.
  ASSERT_TRUE(init_chorus());
  expect_usable("env.after");
  shutdown_chorus();
}

TEST(Lifecycle, EveryCallAfterShutdownThrowsAndShutdownTwiceIsSafe) {
  ASSERT_TRUE(init_chorus());
  expect_usable("life.before_shutdown");
  EXPECT_NO_THROW(chorus::shutdown());
  EXPECT_NO_THROW(chorus::shutdown());
  EXPECT_FALSE(chorus::is_initialized());
  expect_every_call_throws("Chorus has been shut down");
}

class Mismatch : public ChorusSuite {
 protected:
  // Rank 1 submits `odd`, every other rank `even`; each rank must see the
  // collective fail with `expected` (a regex when `regex`).
  void expect_mismatch(const std::function<Handle()>& even, const std::function<Handle()>& odd,
                       const std::string& expected, bool regex = false) {
    const chorus::Status status = outcome(rank() == 1 ? odd : even);
    EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
    if (regex) {
      EXPECT_THAT(status.message(), MatchesRegex(expected));
    } else {
      EXPECT_EQ(status.message(), expected);
    }
    expect_usable("after." + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }
  AllreduceOptions with_op(ReduceOp op) {
    AllreduceOptions o;
    o.op = op;
    return o;
  }
  Buffer a_{DataType::kFloat32, {2, 3}};
  Buffer b_{DataType::kFloat64, {2, 3}};
  Buffer c_{DataType::kFloat32, {3, 2}};
};

TEST_F(Mismatch, Dtype) {
  expect_mismatch([&] { return chorus::allreduce_async("mm.dtype", a_.tensor()); },
                  [&] { return chorus::allreduce_async("mm.dtype", b_.tensor()); },
                  "Mismatched dtype for allreduce 'mm.dtype': rank 0 has float32, rank 1 has float64");
}

TEST_F(Mismatch, DtypeOfAllgather) {
  expect_mismatch([&] { return chorus::allgather_async("mm.gdtype", a_.tensor()); },
                  [&] { return chorus::allgather_async("mm.gdtype", b_.tensor()); },
                  "Mismatched dtype for allgather 'mm.gdtype': rank 0 has float32, rank 1 has float64");
}

TEST_F(Mismatch, Shape) {
  expect_mismatch([&] { return chorus::allreduce_async("mm.shape", a_.tensor()); },
                  [&] { return chorus::allreduce_async("mm.shape", c_.tensor()); },
                  "Mismatched shape for allreduce 'mm.shape': rank 0 has [2, 3], rank 1 has [3, 2]");
}

TEST_F(Mismatch, ReduceOp) {
  expect_mismatch([&] { return chorus::allreduce_async("mm.op", a_.tensor(), with_op(ReduceOp::kSum)); },
                  [&] { return chorus::allreduce_async("mm.op", a_.tensor(), with_op(ReduceOp::kMax)); },
                  "Mismatched reduce op for allreduce 'mm.op': rank 0 has sum, rank 1 has max");
}

TEST_F(Mismatch, RootRank) {
  expect_mismatch([&] { return chorus::broadcast_async("mm.root", a_.tensor(), 0); },
                  [&] { return chorus::broadcast_async("mm.root", a_.tensor(), 1); },
                  "Mismatched root rank for broadcast 'mm.root': rank 0 has 0, rank 1 has 1");
}

TEST_F(Mismatch, PrescaleFactor) {
  AllreduceOptions half = with_op(ReduceOp::kSum), twice = half;
  half.prescale_factor = 0.5;
  twice.prescale_factor = 2.0;
  // How a double prints is not fixed by CONVENTIONS.md: accept 0.5/0.50000
  // and 2/2.0/2.000000.
  expect_mismatch([&] { return chorus::allreduce_async("mm.pre", a_.tensor(), half); },
                  [&] { return chorus::allreduce_async("mm.pre", a_.tensor(), twice); },
                  "Mismatched prescale factor for allreduce 'mm\\.pre': rank 0 has 0\\.50*, "
                  "rank 1 has 2(\\.0*)?",
                  true);
}

TEST_F(Mismatch, PostscaleFactor) {
  AllreduceOptions one = with_op(ReduceOp::kSum), three = one;
  three.postscale_factor = 3.0;
  expect_mismatch([&] { return chorus::allreduce_async("mm.post", a_.tensor(), one); },
                  [&] { return chorus::allreduce_async("mm.post", a_.tensor(), three); },
                  "Mismatched postscale factor for allreduce 'mm\\.post': rank 0 has 1(\\.0*)?, "
                  "rank 1 has 3(\\.0*)?",
                  true);
}

TEST_F(Mismatch, ReducescatterFactors) {
  chorus::ReducescatterOptions half, twice;
  half.prescale_factor = 0.5;
  twice.prescale_factor = 2.0;
  Buffer rows(DataType::kInt16, {2 * size(), 2});
  expect_mismatch([&] { return chorus::reducescatter_async("mm.rspre", rows.tensor(), half); },
                  [&] { return chorus::reducescatter_async("mm.rspre", rows.tensor(), twice); },
                  "Mismatched prescale factor for reducescatter 'mm\\.rspre': rank 0 has 0\\.50*, "
                  "rank 1 has 2(\\.0*)?",
                  true);
  chorus::ReducescatterOptions one, three;
  three.postscale_factor = 3.0;
  expect_mismatch([&] { return chorus::reducescatter_async("mm.rspost", rows.tensor(), one); },
                  [&] { return chorus::reducescatter_async("mm.rspost", rows.tensor(), three); },
                  "Mismatched postscale factor for reducescatter 'mm\\.rspost': rank 0 has 1(\\.0*)?, "
                  "rank 1 has 3(\\.0*)?",
                  true);
}

TEST_F(Mismatch, Operation) {
  // Which op the "for <op>" part names when the ops differ is not fixed.
  expect_mismatch([&] { return chorus::allreduce_async("mm.operation", a_.tensor()); },
                  [&] { return chorus::allgather_async("mm.operation", a_.tensor()); },
                  "Mismatched operation for (allreduce|allgather) 'mm\\.operation': rank 0 has "
                  "allreduce, rank 1 has allgather",
                  true);
}

// A group whose member count differs between ranks: every member on every
// rank fails with the group's mismatch, the extra members of the larger
// group included (they have no partner on the other ranks), in both
// directions, and also when the members were in the response cache from an
// earlier, agreeing run of the group.
class GroupMismatch : public Mismatch {
 protected:
  Handle group_of(const std::string& name, int members) {
    std::vector<chorus::Tensor> tensors;
    for (int i = 0; i < members; ++i) tensors.push_back(members_[static_cast<size_t>(i)].tensor());
    return chorus::grouped_allreduce_async(name, tensors, tensors);
  }
  void expect_group_mismatch(const std::string& name, int even_members, int odd_members) {
    const std::string expected = "Mismatched group for allreduce '" + name + ".0': rank 0 has group '" + name +
                                 "' of " + std::to_string(even_members) + ", rank 1 has group '" + name + "' of " +
                                 std::to_string(odd_members);
    expect_mismatch([&] { return group_of(name, even_members); }, [&] { return group_of(name, odd_members); },
                    expected);
  }
  std::vector<Buffer> members_{Buffer(DataType::kFloat32, {2, 3}), Buffer(DataType::kFloat32, {2, 3}),
                               Buffer(DataType::kFloat32, {2, 3})};
};

TEST_F(GroupMismatch, MoreMembersOnOneRank) { expect_group_mismatch("mm.group.more", 1, 2); }

TEST_F(GroupMismatch, FewerMembersOnOneRank) { expect_group_mismatch("mm.group.fewer", 3, 1); }

TEST_F(GroupMismatch, MembersCachedFromAnEarlierRun) {
  for (int run = 0; run < 2; ++run) {
    const chorus::Status status = outcome([&] { return group_of("mm.group.cached", 3); });
    ASSERT_TRUE(is_ok(status)) << "run " << run;
  }
  // Rank 1's members 0 and 1 are cache hits now; rank 0 changes the group.
  expect_group_mismatch("mm.group.cached", 2, 3);
  // And the group runs again once the ranks agree.
  EXPECT_TRUE(is_ok(outcome([&] { return group_of("mm.group.cached", 3); })));
}

TEST_F(Mismatch, NameAlreadyInFlightThrowsOnThatRank) {
  // Rank 1 submits first, alone, so its collective cannot complete; its
  // second submission under the same name must throw at once. The others
  // submit only after that, and the first collective then completes.
  const auto inputs = make_inputs(DataType::kFloat32, {8}, size(), 1, kSeed);
  Buffer mine = inputs[rank()];
  Buffer again = inputs[rank()];
  AllreduceOptions sum = with_op(ReduceOp::kSum);
  Handle handle;
  if (rank() == 1) {
    handle = submit([&] { return chorus::allreduce_async("inflight.x", mine.tensor(), sum); });
    const chorus::Status second = thrown_by([&] { (void)chorus::allreduce_async("inflight.x", again.tensor(), sum); });
    EXPECT_FALSE(second.ok());
    EXPECT_EQ(second.message(), "A collective named 'inflight.x' is already in flight on rank 1");
    EXPECT_FALSE(handle.test());
  }
  test_barrier();
  if (rank() != 1) handle = submit([&] { return chorus::allreduce_async("inflight.x", mine.tensor(), sum); });
  EXPECT_DONE(handle);
  EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  expect_usable("inflight.after");
}

// Names the calling line in failures of the shared helper.
#define EXPECT_INVALID(...)   \
  do {                        \
    SCOPED_TRACE("");         \
    expect_invalid(__VA_ARGS__); \
  } while (0)

class InvalidArgument : public ChorusSuite {
 protected:
  // Every rank makes the same invalid call: it must fail (at submission or
  // through the handle) as an invalid argument whose lower-cased message
  // matches `words` (a regex, so that a few wordings are accepted).
  void expect_invalid(const std::function<Handle()>& call, const std::string& words) {
    const chorus::Status status = outcome(call);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument)
        << (status.ok() ? "the call succeeded" : status.message());
    std::string lower = status.message();
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_THAT(lower, ContainsRegex(words)) << status.message();
  }
  Buffer f_{DataType::kFloat32, {4, 2}};
  Buffer g_{DataType::kFloat32, {2, 4}};
  Buffer bool_{DataType::kBool, {4, 2}};
};

TEST_F(InvalidArgument, NullDataWithElements) {
  const chorus::Tensor null_tensor(nullptr, DataType::kFloat32, {4});
  EXPECT_INVALID([&] { return chorus::allreduce_async("bad.null", null_tensor); }, "null");
  EXPECT_INVALID([&] { return chorus::broadcast_async("bad.null2", null_tensor, 0); }, "null");
  expect_usable("bad.null.after");
}

TEST_F(InvalidArgument, NegativeDimension) {
  const chorus::Tensor negative(f_.data(), DataType::kFloat32, {-1, 2});
  EXPECT_INVALID([&] { return chorus::allreduce_async("bad.neg", negative); }, "-1|negative");
  EXPECT_INVALID([&] { return chorus::allgather_async("bad.neg2", negative); }, "-1|negative");
  expect_usable("bad.neg.after");
}

TEST_F(InvalidArgument, BoolReductions) {
  EXPECT_INVALID([&] { return chorus::allreduce_async("bad.bool", bool_.tensor()); }, "bool");
  EXPECT_INVALID([&] { return chorus::reducescatter_async("bad.boolrs", bool_.tensor(), ReduceOp::kMax); },
                 "bool");
  // Rows divisible by size, so that the dtype is the only thing wrong.
  Buffer bool_rows(DataType::kBool, {2 * size(), 2});
  EXPECT_INVALID([&] { return chorus::alltoall_async("bad.boola2a", bool_rows.tensor()); }, "bool");
  expect_usable("bad.bool.after");
}

TEST_F(InvalidArgument, FactorsThatAreNotFinite) {
  Buffer ints(DataType::kInt16, {4, 2});
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [pre, post] : {std::pair<double, double>{nan, 1.0}, {1.0, inf}, {-inf, 2.0}}) {
    const bool first = !std::isfinite(pre);
    const std::string which = first ? "prescale" : "postscale";
    AllreduceOptions options;
    options.prescale_factor = pre;
    options.postscale_factor = post;
    EXPECT_INVALID([&] { return chorus::allreduce_async("bad.factor", f_.tensor(), options); },
                   "'bad\\.factor': " + which + " factor is -?(inf|nan); it must be finite");
    EXPECT_INVALID([&] { return chorus::allreduce_async("bad.ifactor", ints.tensor(), options); },
                   which + " factor is -?(inf|nan); it must be finite");
    chorus::ReducescatterOptions rs;
    rs.prescale_factor = pre;
    rs.postscale_factor = post;
    EXPECT_INVALID([&] { return chorus::reducescatter_async("bad.rsfactor", ints.tensor(), rs); },
                   "'bad\\.rsfactor': " + which + " factor is -?(inf|nan); it must be finite");
  }
  expect_usable("bad.factor.after");
}

TEST_F(InvalidArgument, UnknownReduceOp) {
  AllreduceOptions options;
  options.op = static_cast<ReduceOp>(42);
  EXPECT_INVALID([&] { return chorus::allreduce_async("bad.op", f_.tensor(), options); }, "reduce op");
  expect_usable("bad.op.after");
}

TEST_F(InvalidArgument, AlltoallSplits) {
  // f_ has 4 rows: splits summing to 5, and splits with one entry too many.
  std::vector<int64_t> too_many_rows(static_cast<size_t>(size()), 0);
  too_many_rows[0] = 5;
  std::vector<int64_t> wrong_length(static_cast<size_t>(size()) + 1, 0);
  wrong_length[0] = 4;
  EXPECT_INVALID([&] { return chorus::alltoall_async("bad.splits", f_.tensor(), too_many_rows); }, "split");
  EXPECT_INVALID([&] { return chorus::alltoall_async("bad.splits2", f_.tensor(), wrong_length); }, "split");
  expect_usable("bad.splits.after");
}

TEST_F(InvalidArgument, RootRankOutOfRange) {
  EXPECT_INVALID([&] { return chorus::broadcast_async("bad.root", f_.tensor(), size()); }, "root");
  EXPECT_INVALID([&] { return chorus::broadcast_async("bad.root2", f_.tensor(), -1); }, "root");
  expect_usable("bad.root.after");
}

TEST_F(InvalidArgument, OutputDiffersFromInputAndGroupSizes) {
  EXPECT_INVALID([&] { return chorus::allreduce_async("bad.out", f_.tensor(), g_.tensor()); }, "shape|\\[2, 4\\]");
  EXPECT_INVALID([&] { return chorus::grouped_allreduce_async("bad.group", {f_.tensor(), f_.tensor()}, {g_.tensor()}); },
                 "output");
  expect_usable("bad.out.after");
}

}  // namespace
}  // namespace chorus_test
