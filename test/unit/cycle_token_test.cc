// CycleToken: one holder at a time; a waiter takes it only when free; the
// background thread parks while a waiter holds it and gets it back when the
// waiter hands back, woken or by its own look. Waits are checked from below
// only; the upper bounds are generous limits that turn a hang into a failure.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "runtime/cycle_token.h"

namespace chorus {
namespace {

using std::chrono::milliseconds;

constexpr auto kHangLimit = std::chrono::seconds(20);

TEST(CycleTokenTest, AWaiterTakesTheTokenOnlyWhileTheBackgroundThreadHasLetGo) {
  CycleToken token;
  token.take_for_background();
  EXPECT_FALSE(token.try_take());
  token.release_by_background();
  ASSERT_TRUE(token.try_take());
  EXPECT_FALSE(token.try_take());
  token.hand_back(false);
  EXPECT_TRUE(token.try_take());
  token.hand_back(false);
}

TEST(CycleTokenTest, TheBackgroundThreadParksWhileAWaiterHoldsTheToken) {
  CycleToken token;
  ASSERT_TRUE(token.try_take());
  std::atomic<bool> taken{false};
  auto background = std::async(std::launch::async, [&] {
    token.take_for_background();
    taken = true;
    token.release_by_background();
  });
  // Several of its looks go by: it stays parked.
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_FALSE(taken.load());
  token.hand_back(true);
  ASSERT_EQ(background.wait_for(kHangLimit), std::future_status::ready) << "the background thread stayed parked";
  EXPECT_TRUE(taken.load());
}

TEST(CycleTokenTest, AParkedBackgroundThreadFindsTheTokenAWaiterLeftWithoutWakingIt) {
  CycleToken token;
  ASSERT_TRUE(token.try_take());
  auto background = std::async(std::launch::async, [&] {
    token.take_for_background();
    token.release_by_background();
  });
  token.hand_back(false);
  ASSERT_EQ(background.wait_for(kHangLimit), std::future_status::ready) << "the background thread stayed parked";
}

}  // namespace
}  // namespace chorus
