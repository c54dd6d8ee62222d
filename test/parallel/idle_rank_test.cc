// An idle rank costs no CPU: once nothing has been queued for a while, the
// background thread sleeps until something concerns it, instead of waking
// to poll. Checked through the kernel's count of the thread's context
// switches (/proc): a thread that never runs makes none. Every rank of a
// ctest job is on one host, where the cycle trigger goes through shared
// memory; then a collective after the idle window checks that a sleeping
// rank still wakes for work.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/harness.h"
#include "support/thread_stats.h"

namespace chorus_test {
namespace {

class IdleRank : public ChorusSuite {};

TEST_F(IdleRank, BackgroundThreadDoesNotRunWhileNothingIsQueued) {
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  // Some work first, small and large, as a training step leaves it.
  for (int64_t elements : {int64_t{1024}, int64_t{1} << 20}) {
    std::vector<float> data(static_cast<size_t>(elements), static_cast<float>(rank() + 1));
    ASSERT_DONE(chorus::allreduce_async("idle.warm." + std::to_string(elements),
                                        chorus::Tensor(data.data(), chorus::DataType::kFloat32, {elements}),
                                        sum));
    EXPECT_EQ(data[0], static_cast<float>(size() * (size() + 1) / 2));
  }
  const std::string thread = thread_dir_named("chorus-bg");
  ASSERT_FALSE(thread.empty()) << "no thread named chorus-bg in this process";
  // The background thread backs off for ~40 ms after its last cycle
  // (ShmCycleTrigger); wait that out, then watch it for a second. The
  // barriers (on the tests' own communicator) keep every rank's next
  // collective out of the others' windows: it would rightly wake them.
  test_barrier();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const ThreadStats before = read_thread_stats(thread);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const ThreadStats after = read_thread_stats(thread);
  test_barrier();
  ASSERT_TRUE(before.ok && after.ok) << "cannot read " << thread << "/schedstat or /status";
  EXPECT_EQ(after.context_switches - before.context_switches, 0)
      << "the idle background thread ran " << after.context_switches - before.context_switches << " times in 1 s";

  // Still wakes for work.
  std::vector<float> data(16, static_cast<float>(rank() + 1));
  ASSERT_DONE(chorus::allreduce_async("idle.after", chorus::Tensor(data.data(), chorus::DataType::kFloat32, {16}),
                                      sum));
  EXPECT_EQ(data[15], static_cast<float>(size() * (size() + 1) / 2));
}

}  // namespace
}  // namespace chorus_test
