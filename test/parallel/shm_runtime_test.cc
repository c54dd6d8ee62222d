// The shared-memory allreduce through the public API: CHORUS_SHM_ALLREDUCE=on
// with many concurrent tensors of every dtype and reduce op (fused into
// shared buffers, and alone; sizes that split unevenly among the ranks;
// postscale factors) against the independent reference; float16 sums that show the float32 accumulation of
// the shared-memory path (so the test knows that path ran); and in auto mode
// with a small threshold, small tensors that go to MPI alone and to shared
// memory when fused must give the same bits with fusion on and off. Also
// the settings are checked: a threshold that differs from rank 0's fails
// init() on every rank.
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "ops/kernels/half.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::AllreduceOptions;
using chorus::Handle;
using ::testing::HasSubstr;

constexpr uint64_t kSeed = 0x5a4d;

struct Pending {
  std::string name;
  Buffer data;
  std::vector<double> expected;
  Handle handle;
};

// init() with the given CHORUS_* settings (restored afterwards: init reads
// the environment only once).
::testing::AssertionResult init_with(std::vector<std::pair<std::string, const char*>> settings) {
  ScopedEnv env(std::move(settings));
  return init_chorus();
}

// Every dtype and op, sizes that split unevenly, floating-point tensors
// with a postscale too, integer ones with both factors; `fusion_threshold` "0" runs each tensor alone,
// where the shared-memory path scales each rank's share as it reduces it
// (fused tensors are scaled as they leave the fusion buffer).
void check_every_dtype_and_op(const char* fusion_threshold) {
  ASSERT_TRUE(init_with({{"CHORUS_SHM_ALLREDUCE", "on"}, {"CHORUS_FUSION_THRESHOLD", fusion_threshold}}));
  std::deque<Pending> pending;
  int index = 0;
  for (int round = 0; round < 2; ++round) {
    for (DataType dtype : numeric_dtypes()) {
      for (ReduceOp op : all_reduce_ops()) {
        // A scalar, sizes that are not multiples of the ranks or of a cache
        // line, and (every few) one large enough for several chunks.
        for (int64_t elements : {int64_t{1}, int64_t{13 + index % 5}, int64_t{1000 + index % 7},
                                 index % 9 == 0 ? int64_t{100003} : int64_t{70}}) {
          const Values values = op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
          const auto inputs = make_inputs(dtype, {elements}, world_size(), index, kSeed, values);
          Pending& p = pending.emplace_back();
          p.name = "shm.many." + std::to_string(index++);
          p.data = inputs[world_rank()];
          p.expected = reference_reduce(inputs, op);
          AllreduceOptions options;
          options.op = op;
          if (chorus::is_floating_point(dtype) && round == 1) {
            options.postscale_factor = 0.5;  // exact in every floating-point dtype
            for (double& value : p.expected) value *= 0.5;
          } else if (round == 1) {
            // Integers, scaled as Horovod does (the executor's, not the
            // shared-memory path's, since the backend sees no factor).
            options.prescale_factor = 3.0;
            options.postscale_factor = 0.5;
            p.expected = reference_reduce(inputs, op, 3.0, 0.5);
          }
          p.handle = submit([&] { return chorus::allreduce_async(p.name, p.data.tensor(), options); });
        }
      }
    }
    int failures = 0;
    for (Pending& p : pending) {
      EXPECT_DONE(p.handle);
      const auto result = matches(p.data.tensor(), p.expected);
      if (!result && ++failures <= 5) {
        ADD_FAILURE() << p.name << " (" << chorus::dtype_name(p.data.dtype()) << "): " << result.message();
      }
    }
    EXPECT_EQ(failures, 0);
    pending.clear();
  }
  shutdown_chorus();
}

TEST(ShmRuntime, ManyConcurrentFusedTensorsOfEveryDtypeAndOp) { check_every_dtype_and_op("67108864"); }

TEST(ShmRuntime, EveryDtypeAndOpAloneScaledAsTheSharesAreReduced) { check_every_dtype_and_op("0"); }

// float16 sums of full-precision values: the shared-memory path adds in
// float32 over all ranks and rounds once (on 3+ ranks MPI would round after
// every rank, which differs for some elements).
TEST(ShmRuntime, Float16SumsAccumulateInFloat32) {
  ASSERT_TRUE(init_with({{"CHORUS_SHM_ALLREDUCE", "on"}}));
  const int64_t n = 4097;
  const auto inputs = make_inputs(DataType::kFloat16, {n}, world_size(), 1, kSeed, Values::kRandom);
  Buffer data = inputs[world_rank()];
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  EXPECT_TRUE(is_ok(thrown_by([&] { chorus::allreduce("shm.f16", data.tensor(), sum); })));
  Buffer expected(DataType::kFloat16, {n});
  for (int64_t i = 0; i < n; ++i) {
    float acc = 0;
    for (int r = 0; r < world_size(); ++r) {
      uint16_t bits;
      std::memcpy(&bits, static_cast<const char*>(inputs[r].data()) + 2 * i, 2);
      acc = r == 0 ? chorus::float16_to_float(bits) : acc + chorus::float16_to_float(bits);
    }
    const uint16_t rounded = chorus::float_to_float16(acc);
    std::memcpy(static_cast<char*>(expected.data()) + 2 * i, &rounded, 2);
  }
  EXPECT_TRUE(same_bytes(data.tensor(), expected));
  shutdown_chorus();
}

// Runs the same 80 small tensors (400 bytes each: below the threshold alone,
// above it fused) and returns every result, in order.
std::vector<Buffer> run_small_tensors(const char* fusion_threshold, int rank, int size) {
  std::vector<Buffer> results;
  EXPECT_TRUE(init_with({{"CHORUS_SHM_ALLREDUCE", "auto"},
                         {"CHORUS_SHM_ALLREDUCE_THRESHOLD", "4096"},
                         {"CHORUS_FUSION_THRESHOLD", fusion_threshold}}));
  if (!chorus::is_initialized()) return results;
  std::deque<Pending> pending;
  const DataType dtypes[] = {DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kFloat16};
  for (int t = 0; t < 80; ++t) {
    const DataType dtype = dtypes[t % 4];
    const int64_t elements = static_cast<int64_t>(400 / chorus::dtype_size(dtype));
    Pending& p = pending.emplace_back();
    p.name = "shm.fusion." + std::to_string(t);
    p.data = make_inputs(dtype, {elements}, size, t, kSeed, Values::kRandom)[rank];
    AllreduceOptions options;
    // Sums, products and averages (scaled as they are reduced).
    options.op = t % 5 == 0 ? ReduceOp::kProduct : t % 5 == 1 ? ReduceOp::kAverage : ReduceOp::kSum;
    p.handle = submit([&] { return chorus::allreduce_async(p.name, p.data.tensor(), options); });
  }
  for (Pending& p : pending) {
    EXPECT_DONE(p.handle);
    results.push_back(p.data);
  }
  shutdown_chorus();
  return results;
}

TEST(ShmRuntime, SameBitsWithFusionOnAndOffAcrossTheThreshold) {
  const std::vector<Buffer> fused = run_small_tensors("67108864", world_rank(), world_size());
  const std::vector<Buffer> alone = run_small_tensors("0", world_rank(), world_size());
  ASSERT_EQ(fused.size(), alone.size());
  for (size_t t = 0; t < fused.size(); ++t) {
    Buffer a = alone[t];
    EXPECT_TRUE(same_bytes(a.tensor(), fused[t])) << "tensor " << t;
  }
}

TEST(ShmRuntime, ThresholdDifferentFromRankZeroFailsInitOnEveryRank) {
  const int odd = world_size() - 1;
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_SHM_ALLREDUCE_THRESHOLD", world_rank() == odd ? "1" : nullptr);
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok()) << "init() succeeded on rank " << world_rank();
  if (world_rank() == odd) {
    EXPECT_THAT(status.message(), HasSubstr("CHORUS_SHM_ALLREDUCE_THRESHOLD must be the same on every rank"));
  } else {
    EXPECT_THAT(status.message(), HasSubstr("different from rank 0 on rank(s) [" + std::to_string(odd) + "]"));
  }
}

TEST(ShmRuntime, BadModeIsRefusedWithTheAcceptedValues) {
  chorus::Status status;
  {
    ScopedEnv env("CHORUS_SHM_ALLREDUCE", "yes");
    status = thrown_by([] { chorus::init(); });
  }
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("CHORUS_SHM_ALLREDUCE='yes' is invalid: expected one of auto, on, off"));
}

}  // namespace
}  // namespace chorus_test
