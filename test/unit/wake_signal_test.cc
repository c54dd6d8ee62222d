// WakeSignal over its own word and over a word shared with another process:
// a ring is remembered until the next wait, a wait without a deadline ends
// only when rung, and a peer's ring ends a sleep early only when the sleeper
// asked for that. Waits are checked from below only (never "fast enough");
// the upper bounds are generous limits that turn a hang into a failure.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <new>
#include <thread>

#include "base/wake_signal.h"

namespace chorus {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr auto kHangLimit = std::chrono::seconds(20);

// Returns once a waiter has registered as a sleeper on `word` (it is inside,
// or about to enter, its futex wait), so that a ring lands on a sleep.
void wait_for_a_sleeper(const WakeWord& word) {
  const auto limit = steady_clock::now() + kHangLimit;
  while (word.sleepers.load() == 0 && steady_clock::now() < limit) std::this_thread::sleep_for(milliseconds(1));
}

TEST(WakeSignalTest, ARingIsRememberedUntilTheNextWait) {
  WakeSignal wake;
  wake.notify();
  wake.notify();
  const auto start = steady_clock::now();
  EXPECT_TRUE(wake.wait_until(start + kHangLimit));
  EXPECT_LT(steady_clock::now() - start, kHangLimit);
  // Both rings were consumed by that one wait.
  EXPECT_FALSE(wake.wait_until(steady_clock::now() + milliseconds(1)));
}

TEST(WakeSignalTest, AWaitWithoutRingLastsUntilItsDeadline) {
  WakeSignal wake;
  const auto start = steady_clock::now();
  EXPECT_FALSE(wake.wait_until(start + milliseconds(30)));
  EXPECT_GE(steady_clock::now() - start, milliseconds(30));
  EXPECT_FALSE(wake.wait_until(steady_clock::now() - milliseconds(1)));  // already past
}

TEST(WakeSignalTest, AWaitWithoutDeadlineEndsWhenAnotherThreadRings) {
  WakeSignal wake;
  auto woken = std::async(std::launch::async, [&] { return wake.wait_until(std::nullopt); });
  std::this_thread::sleep_for(milliseconds(20));  // usually asleep by now; if not, the ring is remembered
  wake.notify();
  ASSERT_EQ(woken.wait_for(kHangLimit), std::future_status::ready) << "notify() did not wake the waiter";
  EXPECT_TRUE(woken.get());
}

TEST(WakeSignalTest, APeersRingEndsOnlyASleepThatAcceptsIt) {
  WakeWord word{};
  WakeSignal wake(&word);
  // Not woken by peers: the ring is seen when the sleep's deadline ends it.
  const auto start = steady_clock::now();
  auto later = std::async(std::launch::async, [&] { return wake.wait_until(start + milliseconds(150), false); });
  wait_for_a_sleeper(word);
  word.ring_from_peer();
  ASSERT_EQ(later.wait_for(kHangLimit), std::future_status::ready);
  EXPECT_TRUE(later.get());
  EXPECT_GE(steady_clock::now() - start, milliseconds(150));
  // Woken by peers, without a deadline: only the ring can end it.
  auto at_once = std::async(std::launch::async, [&] { return wake.wait_until(std::nullopt, true); });
  wait_for_a_sleeper(word);
  word.ring_from_peer();
  ASSERT_EQ(at_once.wait_for(kHangLimit), std::future_status::ready) << "the peer's ring did not wake the waiter";
  EXPECT_TRUE(at_once.get());
}

TEST(WakeSignalTest, AnotherProcessWakesAWaitOnASharedWord) {
  void* memory = mmap(nullptr, sizeof(WakeWord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* word = new (memory) WakeWord{};
  WakeSignal wake(word);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    usleep(20000);
    word->ring_from_peer();
    _exit(0);
  }
  auto woken = std::async(std::launch::async, [&] { return wake.wait_until(std::nullopt, true); });
  const bool ready = woken.wait_for(kHangLimit) == std::future_status::ready;
  int child_status = 0;
  waitpid(child, &child_status, 0);
  if (!ready) word->ring();  // free the waiter so that the test can end
  EXPECT_TRUE(ready) << "the other process's ring did not wake the waiter";
  EXPECT_TRUE(woken.get());
  munmap(memory, sizeof(WakeWord));
}

}  // namespace
}  // namespace chorus
