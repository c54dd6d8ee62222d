// The hierarchical allreduce through the public API on real "hosts"
// (network namespaces, run by run_netns_test.sh under mpirun). The driver
// says how mpirun placed the ranks in HIER_TEST_LAYOUT ("block H L",
// "cyclic H L", or "uneven" for 3 ranks on one host and 1 on the other);
// the references are computed from that placement, never from what Chorus
// reports about it.
//   - many concurrent tensors of every dtype and reduce op (average
//     included), fused, sizes uneven among the ranks, with mode on;
//   - floating-point sums and products of full-precision values in auto
//     mode, bit for bit the hierarchical order (hosts first): with 2+ ranks
//     per host that order differs from the flat one, which shows that the
//     hierarchical path ran (the driver also checks the debug log line);
//   - mode off gives the flat MPI order instead;
//   - auto gives the same bits with fusion on and off across the size
//     threshold;
//   - unequal hosts: on fails init() on every rank, auto runs flat MPI.
#include <cstdlib>
#include <cstring>
#include <deque>
#include <sstream>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/hierarchical_reference.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using ::testing::HasSubstr;

constexpr uint64_t kSeed = 0x41e7;

// The placement run_netns_test.sh asked mpirun for.
struct Placement {
  bool uneven = false;
  HostLayout layout;
};

Placement placement() {
  const char* text = std::getenv("HIER_TEST_LAYOUT");
  Placement p;
  if (text == nullptr) {
    ADD_FAILURE() << "HIER_TEST_LAYOUT is not set: run this test through run_netns_test.sh";
    return p;
  }
  std::istringstream in(text);
  std::string kind;
  int hosts = 0;
  int local = 0;
  in >> kind >> hosts >> local;
  if (kind == "uneven") {
    p.uneven = true;
  } else if (kind == "block" || kind == "cyclic") {
    p.layout = kind == "block" ? HostLayout::block(hosts, local) : HostLayout::cyclic(hosts, local);
    if (p.layout.ranks() != world_size()) {
      ADD_FAILURE() << "HIER_TEST_LAYOUT='" << text << "' describes " << p.layout.ranks() << " ranks, the job has "
                    << world_size();
    }
  } else {
    ADD_FAILURE() << "HIER_TEST_LAYOUT='" << text << "' is invalid: expected 'block H L', 'cyclic H L' or 'uneven'";
  }
  return p;
}

::testing::AssertionResult init_with(std::vector<std::pair<std::string, const char*>> settings) {
  ScopedEnv env(std::move(settings));
  return init_chorus();
}

// A tensor in flight and what it must become.
struct Pending {
  std::string name;
  DataType dtype = DataType::kFloat32;
  Bytes data;
  Bytes expected;
  Handle handle;
};

Handle submit_bytes(Pending& p, ReduceOp op) {
  chorus::Tensor tensor(p.data.data(), p.dtype,
                        {static_cast<int64_t>(p.data.size() / chorus::dtype_size(p.dtype))});
  AllreduceOptions options;
  options.op = op;
  return submit([&] { return chorus::allreduce_async(p.name, tensor, options); });
}

// The support's small values keep 8-bit sums and products in range up to 4
// ranks; beyond, Chorus wraps them (two's complement) and so must the
// expectation.
std::vector<double> wrapped(DataType dtype, std::vector<double> values) {
  for (double& v : values) {
    if (dtype == DataType::kUInt8) v = static_cast<double>(static_cast<uint8_t>(static_cast<int64_t>(v)));
    if (dtype == DataType::kInt8) v = static_cast<double>(static_cast<int8_t>(static_cast<int64_t>(v)));
  }
  return values;
}

TEST(HierarchicalRuntime, ChorusSeesTheHostsMpirunMadeEqual) {
  const Placement p = placement();
  ASSERT_FALSE(p.uneven);
  ASSERT_TRUE(init_with({}));
  const int me = world_rank();
  EXPECT_EQ(chorus::local_size(), p.layout.local_size);
  EXPECT_EQ(chorus::local_rank(), p.layout.local_of[static_cast<size_t>(me)]);
  EXPECT_EQ(chorus::cross_size(), p.layout.hosts);
  shutdown_chorus();
}

TEST(HierarchicalRuntime, ManyConcurrentFusedTensorsOfEveryDtypeAndOp) {
  ASSERT_FALSE(placement().uneven);
  ASSERT_TRUE(init_with({{"CHORUS_HIERARCHICAL_ALLREDUCE", "on"}}));
  struct Tensor {
    std::string name;
    Buffer data;
    std::vector<double> expected;
    Handle handle;
  };
  std::deque<Tensor> pending;
  int index = 0;
  for (DataType dtype : numeric_dtypes()) {
    for (ReduceOp op : all_reduce_ops()) {
      // A scalar, sizes that are not multiples of the ranks or of a cache
      // line, and every few a larger one.
      for (int64_t elements : {int64_t{1}, int64_t{13 + index % 5}, int64_t{1000 + index % 7},
                               index % 9 == 0 ? int64_t{70001} : int64_t{70}}) {
        const Values values = op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
        const auto inputs = make_inputs(dtype, {elements}, world_size(), index, kSeed, values);
        Tensor& t = pending.emplace_back();
        t.name = "hier.many." + std::to_string(index++);
        t.data = inputs[static_cast<size_t>(world_rank())];
        t.expected = wrapped(dtype, reference_reduce(inputs, op));
        AllreduceOptions options;
        options.op = op;
        t.handle = submit([&] { return chorus::allreduce_async(t.name, t.data.tensor(), options); });
      }
    }
  }
  int failures = 0;
  for (Tensor& t : pending) {
    EXPECT_DONE(t.handle);
    const auto result = matches(t.data.tensor(), t.expected);
    if (!result && ++failures <= 5) {
      ADD_FAILURE() << t.name << " (" << chorus::dtype_name(t.data.dtype()) << "): " << result.message();
    }
  }
  EXPECT_EQ(failures, 0);
  shutdown_chorus();
}

// Floating-point sums and products of full-precision values, all in flight
// together (fused), two of them over two chunks.
void expect_fold_order(const char* mode, bool hierarchical) {
  const Placement p = placement();
  ASSERT_FALSE(p.uneven);
  ASSERT_TRUE(init_with({{"CHORUS_HIERARCHICAL_ALLREDUCE", mode}}));
  std::deque<Pending> pending;
  int index = 0;
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
      // float32 and float16 sums a little over 2 MiB: two chunks.
      const int64_t esize = static_cast<int64_t>(chorus::dtype_size(dtype));
      const bool two_chunks = op == ReduceOp::kSum && (dtype == DataType::kFloat32 || dtype == DataType::kFloat16);
      const int64_t large = two_chunks ? (2 << 20) / esize + 4099 : 9999;
      for (int64_t count : {int64_t{1}, int64_t{999}, large}) {
        const std::vector<Bytes> inputs = order_sensitive_inputs(dtype, op, world_size(), kSeed + index, count);
        Pending& t = pending.emplace_back();
        t.name = std::string("hier.order.") + mode + "." + std::to_string(index++);
        t.dtype = dtype;
        t.data = inputs[static_cast<size_t>(world_rank())];
        t.expected =
            hierarchical ? hierarchical_reference(dtype, op, inputs, p.layout) : flat_reference(dtype, op, inputs);
        t.handle = submit_bytes(t, op);
        // The other order, to show that the two can be told apart here.
        if (p.layout.local_size > 1 && count == 999) {
          const Bytes other =
              hierarchical ? flat_reference(dtype, op, inputs) : hierarchical_reference(dtype, op, inputs, p.layout);
          EXPECT_FALSE(differing_elements(t.expected, other, chorus::dtype_size(dtype)).empty())
              << t.name << ": the hierarchical and flat orders give the same bits, the test cannot tell them apart";
        }
      }
    }
  }
  for (Pending& t : pending) {
    EXPECT_DONE(t.handle);
    const std::vector<int64_t> wrong = differing_elements(t.data, t.expected, chorus::dtype_size(t.dtype));
    EXPECT_TRUE(wrong.empty()) << t.name << " (" << chorus::dtype_name(t.dtype) << ", "
                               << t.data.size() / chorus::dtype_size(t.dtype) << " elements): element "
                               << wrong.front() << " differs from the " << (hierarchical ? "hierarchical" : "flat")
                               << " order";
  }
  shutdown_chorus();
}

TEST(HierarchicalRuntime, AutoFoldsHostsFirstBitForBit) { expect_fold_order("auto", true); }

TEST(HierarchicalRuntime, OffFoldsInWorldRankOrderLikeMpi) { expect_fold_order("off", false); }

// 60 small tensors (400 bytes: below the threshold alone, above it fused);
// every result, in order.
std::vector<Bytes> run_small_tensors(const char* fusion_threshold) {
  std::vector<Bytes> results;
  EXPECT_TRUE(init_with({{"CHORUS_HIERARCHICAL_ALLREDUCE", "auto"},
                         {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "4096"},
                         {"CHORUS_FUSION_THRESHOLD", fusion_threshold}}));
  if (!chorus::is_initialized()) return results;
  const DataType dtypes[] = {DataType::kInt32, DataType::kBFloat16, DataType::kFloat32, DataType::kUInt8};
  std::deque<Pending> pending;
  for (int t = 0; t < 60; ++t) {
    Pending& p = pending.emplace_back();
    p.dtype = dtypes[t % 4];
    const ReduceOp op = t % 5 == 0 ? ReduceOp::kProduct : (t % 7 == 0 ? ReduceOp::kMax : ReduceOp::kSum);
    const int64_t count = static_cast<int64_t>(400 / chorus::dtype_size(p.dtype));
    p.name = "hier.fusion." + std::to_string(t);
    p.data = order_sensitive_input(p.dtype, op, world_rank(), kSeed + 500 + static_cast<uint64_t>(t), count);
    p.handle = submit_bytes(p, op);
  }
  for (Pending& p : pending) {
    EXPECT_DONE(p.handle);
    results.push_back(p.data);
  }
  shutdown_chorus();
  return results;
}

TEST(HierarchicalRuntime, SameBitsWithFusionOnAndOffAcrossTheThreshold) {
  ASSERT_FALSE(placement().uneven);
  const std::vector<Bytes> fused = run_small_tensors("67108864");
  const std::vector<Bytes> alone = run_small_tensors("0");
  ASSERT_EQ(fused.size(), alone.size());
  for (size_t t = 0; t < fused.size(); ++t) EXPECT_EQ(fused[t], alone[t]) << "tensor " << t;
}

TEST(HierarchicalRuntimeUneven, OnFailsInitOnEveryRankNamingTheHostSizes) {
  ASSERT_TRUE(placement().uneven);
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_HIERARCHICAL_ALLREDUCE", "on");
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  EXPECT_THAT(status.message(), HasSubstr("CHORUS_HIERARCHICAL_ALLREDUCE='on' needs the same number of ranks on "
                                          "every host, but this job's 2 hosts hold between 1 and 3 ranks; expected "
                                          "auto (flat MPI for such jobs) or off"));
  EXPECT_FALSE(chorus::is_initialized());
}

TEST(HierarchicalRuntimeUneven, AutoRunsFlatMpi) {
  ASSERT_TRUE(placement().uneven);
  ASSERT_TRUE(init_with({{"CHORUS_HIERARCHICAL_ALLREDUCE", "auto"}}));
  const int64_t count = 5000;
  const std::vector<Bytes> inputs =
      order_sensitive_inputs(DataType::kFloat32, ReduceOp::kSum, world_size(), kSeed + 900, count);
  Pending p;
  p.name = "hier.uneven";
  p.data = inputs[static_cast<size_t>(world_rank())];
  p.handle = submit_bytes(p, ReduceOp::kSum);
  EXPECT_DONE(p.handle);
  EXPECT_EQ(p.data, flat_reference(DataType::kFloat32, ReduceOp::kSum, inputs));
  shutdown_chorus();
}

}  // namespace
}  // namespace chorus_test
