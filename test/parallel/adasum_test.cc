// Adasum (ReduceOp::kAdasum) through the public API, against the paper's
// formula computed here in double precision (support/adasum_reference.h),
// on a power-of-two number of ranks: the whole job at np 2 and 4; at np 3
// a process set of ranks 1 and 2 (and the job itself is refused, naming its
// size). Every rank regenerates every rank's input, so the reference needs
// no collective.
//   - random gradients of several lengths (1, fewer elements than ranks,
//     odd, large), float32 and float64: the formula within a bound derived
//     from the roundings (adasum_tolerance);
//   - orthogonal gradients (disjoint supports) give exactly their sum;
//     identical gradients exactly the gradient (their average); parallel
//     ones (powers of two times one gradient) their average;
//   - several tensors of different sizes fused in one cycle (a grouped
//     allreduce is one unit) each combined by its own dot products: an
//     orthogonal one still gives the sum and an identical one the average,
//     which the Adasum of their concatenation would not;
//   - float16 and bfloat16, computed in float32 and rounded once;
//   - prescale and postscale (Adasum is homogeneous: post * adasum(pre * x));
//   - a joined rank's zeros (the others' combination is unchanged);
//   - a set of two ranks inside the job; a reduce-op mismatch between ranks;
//     the refusals (a set whose size is not a power of two, integers,
//     reducescatter, a GPU tensor).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/adasum_reference.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using chorus::ProcessSet;
using chorus::Status;
using chorus::StatusCode;

constexpr uint64_t kSeed = 0xada5;

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1), a function of its arguments only.
double uniform(uint64_t tensor, uint64_t rank, int64_t i) {
  const uint64_t bits = mix(mix(mix(kSeed ^ tensor) ^ rank) ^ static_cast<uint64_t>(i));
  return static_cast<double>(bits >> 11) * 0x1p-52 - 1.0;
}

// What the gradients of the members look like.
enum class Kind {
  kRandom,      // independent
  kOrthogonal,  // element i is non-zero on set rank i % members only
  kIdentical,   // the same on every member
  kParallel,    // set rank r holds 2^(r % 3 - 1) times one gradient
};

double value_of(Kind kind, uint64_t tensor, int set_rank, int members, int64_t i) {
  switch (kind) {
    case Kind::kRandom: return uniform(tensor, static_cast<uint64_t>(set_rank) + 1, i);
    case Kind::kOrthogonal: return i % members == set_rank ? uniform(tensor, 0, i) : 0.0;
    case Kind::kIdentical: return uniform(tensor, 0, i);
    case Kind::kParallel: return std::ldexp(uniform(tensor, 0, i), set_rank % 3 - 1);
  }
  return 0.0;
}

// One tensor of a test: every member's input (rounded to the dtype) and this
// rank's buffer.
struct Case {
  std::string name;
  DataType dtype;
  int64_t elements;
  Kind kind;
  std::vector<std::vector<double>> grads;  // by set rank, exactly as submitted
  Buffer mine;
};

Case make_case(const std::string& name, DataType dtype, int64_t elements, Kind kind, uint64_t tensor,
               int set_rank, int members) {
  Case c{name, dtype, elements, kind, {}, Buffer(dtype, {elements})};
  for (int r = 0; r < members; ++r) {
    Buffer input(dtype, {elements});
    for (int64_t i = 0; i < elements; ++i) input.set(i, value_of(kind, tensor, r, members, i));
    c.grads.push_back(values_of(input));
    if (r == set_rank) c.mine = input;
  }
  return c;
}

double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat64: return 0x1p-53;
    case DataType::kFloat16: return 0x1p-11;
    case DataType::kBFloat16: return 0x1p-8;
    default: return 0x1p-24;
  }
}

// `got` against post * adasum(pre * grads): within twice the derived bound
// (twice: the bound is first order) scaled by the postscale, plus one
// rounding of each result to the dtype (float16/bfloat16 are narrowed once
// from float32, a postscale rounds once more).
void expect_adasum(const Case& c, const Buffer& got, double pre = 1.0, double post = 1.0) {
  std::vector<std::vector<double>> scaled = c.grads;
  for (auto& grad : scaled) {
    for (double& v : grad) v *= pre;
  }
  std::vector<double> expected = adasum_reference(scaled);
  for (double& v : expected) v *= post;
  const double arithmetic = c.dtype == DataType::kFloat64 ? 0x1p-53 : 0x1p-24;
  const double bound = 2.0 * adasum_tolerance(scaled, arithmetic) * std::abs(post);
  const double rounding = unit_roundoff(c.dtype) + (post != 1.0 ? arithmetic : 0.0);
  for (int64_t i = 0; i < c.elements; ++i) {
    ASSERT_NEAR(got.get(i), expected[i], bound + rounding * std::abs(expected[i]))
        << c.name << " (" << chorus::dtype_name(c.dtype) << ", " << c.elements << " elements) element " << i;
  }
}

// Orthogonal gradients: Adasum is their sum, and every addition is exact
// (one of the two terms is zero), so the bits are the sum's.
void expect_sum(const Case& c, const Buffer& got) {
  for (int64_t i = 0; i < c.elements; ++i) {
    double sum = 0.0;
    for (const auto& grad : c.grads) sum += grad[i];
    ASSERT_EQ(got.get(i), sum) << c.name << " element " << i;
  }
}

// Identical gradients: each level's coefficients are exactly 1/2 (a.b and
// |a|^2 are the same sums), so the result is the gradient itself.
void expect_identical(const Case& c, const Buffer& got) {
  for (int64_t i = 0; i < c.elements; ++i) ASSERT_EQ(got.get(i), c.grads[0][i]) << c.name << " element " << i;
}

class Adasum : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ChorusSuite::SetUpTestSuite();
    if (!chorus::is_initialized()) return;
    const int size = world_size();
    int members = 1;
    while (members * 2 <= size) members *= 2;
    members_.clear();
    for (int r = size - members; r < size; ++r) members_.push_back(r);
    set_ = members == size ? ProcessSet::global() : chorus::add_process_set(members_);
  }

  bool member() const { return std::find(members_.begin(), members_.end(), rank()) != members_.end(); }
  int set_rank() const { return static_cast<int>(std::find(members_.begin(), members_.end(), rank()) - members_.begin()); }
  int members() const { return static_cast<int>(members_.size()); }

  Case make(const std::string& name, DataType dtype, int64_t elements, Kind kind, uint64_t tensor) const {
    return make_case(name, dtype, elements, kind, tensor, set_rank(), members());
  }

  AllreduceOptions options(double pre = 1.0, double post = 1.0) const {
    AllreduceOptions o;
    o.op = ReduceOp::kAdasum;
    o.prescale_factor = pre;
    o.postscale_factor = post;
    o.process_set = set_;
    return o;
  }

  // Allreduces every case alone, all in flight together; returns the results.
  std::vector<Buffer> run_each(std::vector<Case>& cases, double pre = 1.0, double post = 1.0) {
    std::vector<Buffer> results;
    for (const Case& c : cases) results.emplace_back(c.dtype, Shape{c.elements});
    std::vector<Handle> handles;
    for (size_t i = 0; i < cases.size(); ++i) {
      handles.push_back(submit([&] {
        return chorus::allreduce_async(cases[i].name, cases[i].mine.tensor(), results[i].tensor(), options(pre, post));
      }));
    }
    for (const Handle& h : handles) EXPECT_DONE(h);
    return results;
  }

  static ProcessSet set_;
  static std::vector<int> members_;
};

ProcessSet Adasum::set_;
std::vector<int> Adasum::members_;

TEST_F(Adasum, MatchesThePaperFormula) {
  if (!member()) return;  // np 3: rank 0 is outside the set of two
  std::vector<Case> cases;
  uint64_t tensor = 0;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
    for (int64_t elements : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{1001}, int64_t{70001}}) {
      cases.push_back(make("adasum.random." + std::to_string(tensor), dtype, elements, Kind::kRandom, tensor));
      ++tensor;
    }
  }
  const std::vector<Buffer> got = run_each(cases);
  for (size_t i = 0; i < cases.size(); ++i) expect_adasum(cases[i], got[i]);
}

TEST_F(Adasum, OrthogonalGradientsGiveTheSum) {
  if (!member()) return;
  std::vector<Case> cases;
  for (int64_t elements : {int64_t{3}, int64_t{1000}}) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64}) {
      cases.push_back(make("adasum.orthogonal." + std::to_string(cases.size()), dtype, elements, Kind::kOrthogonal,
                           100 + cases.size()));
    }
  }
  const std::vector<Buffer> got = run_each(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    expect_sum(cases[i], got[i]);
    expect_adasum(cases[i], got[i]);
  }
}

TEST_F(Adasum, IdenticalGradientsGiveTheirAverage) {
  if (!member()) return;
  std::vector<Case> cases = {make("adasum.identical.0", DataType::kFloat32, 1000, Kind::kIdentical, 200),
                             make("adasum.identical.1", DataType::kFloat64, 77, Kind::kIdentical, 201)};
  const std::vector<Buffer> got = run_each(cases);
  for (size_t i = 0; i < cases.size(); ++i) expect_identical(cases[i], got[i]);
}

TEST_F(Adasum, ParallelGradientsGiveTheirAverage) {
  if (!member()) return;
  std::vector<Case> cases = {make("adasum.parallel.0", DataType::kFloat32, 1000, Kind::kParallel, 300),
                             make("adasum.parallel.1", DataType::kFloat64, 5, Kind::kParallel, 301)};
  const std::vector<Buffer> got = run_each(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    expect_adasum(cases[i], got[i]);
    // The closed form: the members' factors averaged, times the gradient
    // (set rank 0 holds half of it); it is what the formula gives exactly,
    // so the same bound applies.
    const Case& c = cases[i];
    double mean_factor = 0.0;
    for (int r = 0; r < members(); ++r) mean_factor += std::ldexp(1.0, r % 3 - 1) / members();
    const double bound = 2.0 * adasum_tolerance(c.grads, c.dtype == DataType::kFloat64 ? 0x1p-53 : 0x1p-24);
    for (int64_t e = 0; e < c.elements; ++e) {
      ASSERT_NEAR(got[i].get(e), mean_factor * 2.0 * c.grads[0][e], bound) << c.name << " element " << e;
    }
  }
}

TEST_F(Adasum, FusedTensorsUseTheirOwnDotProducts) {
  if (!member()) return;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
    const std::string prefix = std::string("adasum.fused.") + chorus::dtype_name(dtype);
    std::vector<Case> cases = {
        make(prefix + ".orthogonal", dtype, 1000, Kind::kOrthogonal, 400),
        make(prefix + ".identical", dtype, 2000, Kind::kIdentical, 401),
        make(prefix + ".random", dtype, 409, Kind::kRandom, 402),
        make(prefix + ".one", dtype, 1, Kind::kRandom, 403),
        make(prefix + ".empty", dtype, 0, Kind::kRandom, 404),
        make(prefix + ".parallel", dtype, 7, Kind::kParallel, 405),
    };
    std::vector<chorus::Tensor> inputs;
    std::vector<chorus::Tensor> outputs;
    std::vector<Buffer> got;
    for (const Case& c : cases) got.emplace_back(dtype, Shape{c.elements});
    for (size_t i = 0; i < cases.size(); ++i) {
      inputs.push_back(cases[i].mine.tensor());
      outputs.push_back(got[i].tensor());
    }
    // One unit: negotiated together and fused into one message.
    const Handle h = submit([&] { return chorus::grouped_allreduce_async(prefix, inputs, outputs, options()); });
    ASSERT_DONE(h);
    for (size_t i = 0; i < cases.size(); ++i) expect_adasum(cases[i], got[i]);
    expect_sum(cases[0], got[0]);
    expect_identical(cases[1], got[1]);
    // The test tells the two apart: the Adasum of the whole message moves
    // the orthogonal tensor from its sum by far more than the tolerance.
    if (members() > 1) {
      const double arithmetic = dtype == DataType::kFloat64 ? 0x1p-53 : 0x1p-24;
      const double allowed = 2.0 * adasum_tolerance(cases[0].grads, arithmetic) + unit_roundoff(dtype);
      std::vector<std::vector<double>> whole(cases[0].grads.size());
      for (const Case& c : cases) {
        for (size_t r = 0; r < whole.size(); ++r) whole[r].insert(whole[r].end(), c.grads[r].begin(), c.grads[r].end());
      }
      const std::vector<double> merged = adasum_reference(whole);
      double largest = 0.0;
      for (int64_t e = 0; e < cases[0].elements; ++e) {
        double sum = 0.0;
        for (const auto& grad : cases[0].grads) sum += grad[e];
        largest = std::max(largest, std::abs(merged[e] - sum));
      }
      EXPECT_GT(largest, 100.0 * allowed) << "the whole message's Adasum would pass as the per-tensor one";
    }
  }
}

TEST_F(Adasum, HalfPrecisionGoesThroughFloat32) {
  if (!member()) return;
  std::vector<Case> cases = {make("adasum.half.0", DataType::kFloat16, 1000, Kind::kRandom, 500),
                             make("adasum.half.1", DataType::kBFloat16, 1000, Kind::kRandom, 501),
                             make("adasum.half.2", DataType::kFloat16, 5, Kind::kIdentical, 502),
                             make("adasum.half.3", DataType::kBFloat16, 64, Kind::kOrthogonal, 503)};
  const std::vector<Buffer> got = run_each(cases);
  for (size_t i = 0; i < cases.size(); ++i) expect_adasum(cases[i], got[i]);
  expect_identical(cases[2], got[2]);
  expect_sum(cases[3], got[3]);  // 64 elements: each sum is one member's value
}

TEST_F(Adasum, PrescaleAndPostscale) {
  if (!member()) return;
  std::vector<Case> cases = {make("adasum.scaled.0", DataType::kFloat32, 1001, Kind::kRandom, 600),
                             make("adasum.scaled.1", DataType::kFloat64, 64, Kind::kRandom, 601),
                             make("adasum.scaled.2", DataType::kBFloat16, 300, Kind::kRandom, 602)};
  const std::vector<Buffer> got = run_each(cases, 0.5, 3.0);
  for (size_t i = 0; i < cases.size(); ++i) expect_adasum(cases[i], got[i], 0.5, 3.0);
}

TEST_F(Adasum, AJoinedRankContributesZeros) {
  // join concerns the whole job: at np 3 its size is not a power of two.
  if (!set_.is_global()) return;
  const int joined = size() - 1;
  Case c = make("adasum.join", DataType::kFloat32, 1001, Kind::kRandom, 800);
  std::fill(c.grads[joined].begin(), c.grads[joined].end(), 0.0);
  if (rank() != joined) {
    Buffer got(DataType::kFloat32, {c.elements});
    const Handle h = submit([&] { return chorus::allreduce_async(c.name, c.mine.tensor(), got.tensor(), options()); });
    const Status status = finish(h);
    EXPECT_TRUE(is_ok(status));  // and joins all the same, so that the joined rank is not left waiting
    if (status.ok()) expect_adasum(c, got);
  }
  const Handle join = submit([] { return chorus::join_async(); });
  ASSERT_DONE(join);
}

TEST_F(Adasum, OnASetOfTwoRanks) {
  // np 2: {0, 1}; np 3: {0, 2}; np 4: {0, 3}.
  const std::vector<int> ranks = {0, size() - 1};
  const ProcessSet set = chorus::add_process_set(ranks);
  const auto where = std::find(ranks.begin(), ranks.end(), rank());
  // A lambda, so that a failed assertion still reaches the barrier below.
  if (where != ranks.end()) [&] {
    const int me = static_cast<int>(where - ranks.begin());
    Case c = make_case("adasum.pair", DataType::kFloat32, 513, Kind::kRandom, 700, me, 2);
    Buffer got(DataType::kFloat32, {c.elements});
    AllreduceOptions o = options();
    o.process_set = set;
    const Handle h = submit([&] { return chorus::allreduce_async(c.name, c.mine.tensor(), got.tensor(), o); });
    ASSERT_DONE(h);
    expect_adasum(c, got);
  }();
  test_barrier();
  chorus::remove_process_set(set);
}

TEST_F(Adasum, RanksMustAgreeOnTheOp) {
  if (!member() || members() < 2) return;
  Buffer data(DataType::kFloat32, {6});
  AllreduceOptions o = options();
  if (set_rank() != 0) o.op = ReduceOp::kSum;
  const Handle h = submit([&] { return chorus::allreduce_async("adasum.mismatch", data.tensor(), o); });
  const Status status = finish(h);
  EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
  EXPECT_THAT(status.message(), ::testing::MatchesRegex("Mismatched reduce op for allreduce 'adasum\\.mismatch': "
                                                        "rank [0-9]+ has adasum, rank [0-9]+ has sum"));
}

TEST_F(Adasum, RefusesASetWhoseSizeIsNotAPowerOfTwo) {
  // np 3: the job; np 4: ranks 1 to 3. At np 2 no set of 3 ranks exists.
  if (size() < 3) return;
  const bool job = size() == 3;
  ProcessSet set = ProcessSet::global();
  if (!job) set = chorus::add_process_set({1, 2, 3});
  if (job || rank() != 0) {
    Buffer data(DataType::kFloat32, {4});
    AllreduceOptions o = options();
    o.process_set = set;
    const std::string expected = "'adasum.three': reduce op adasum needs a process set whose size is a power of two "
                                 "(1, 2, 4, 8, ...), but process set " + std::to_string(set.id) + " has 3 ranks";
    Status status = thrown_by([&] { chorus::allreduce_async("adasum.three", data.tensor(), o); });
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.message(), expected);
    status = thrown_by([&] { chorus::grouped_allreduce_async("adasum.three", {data.tensor()}, {data.tensor()}, o); });
    EXPECT_EQ(status.message(), expected);
  }
  test_barrier();
  if (!job) chorus::remove_process_set(set);
}

TEST_F(Adasum, RefusesWhatItCannotCombine) {
  AllreduceOptions o;
  o.op = ReduceOp::kAdasum;
  Buffer ints(DataType::kInt32, {4});
  Status status = thrown_by([&] { chorus::allreduce_async("adasum.int", ints.tensor(), o); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "'adasum.int': reduce op adasum needs a floating-point tensor (float16, bfloat16, "
                              "float32 or float64), not int32");

  Buffer floats(DataType::kFloat32, {4});
  chorus::Tensor on_gpu = floats.tensor();
  on_gpu.device = chorus::Device::cuda(0);
  status = thrown_by([&] { chorus::allreduce_async("adasum.gpu", on_gpu, o); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "'adasum.gpu': reduce op adasum runs on CPU tensors only, but the tensor is on cuda:0");

  Buffer rows(DataType::kFloat32, {size(), 2});
  status = thrown_by([&] { chorus::reducescatter_async("adasum.rs", rows.tensor(), ReduceOp::kAdasum); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "'adasum.rs': reducescatter does not support reduce op adasum (an allreduce op); "
                              "expected Sum, Average, Min, Max or Product");
}

}  // namespace
}  // namespace chorus_test
