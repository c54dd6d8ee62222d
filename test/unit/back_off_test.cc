// sleep_and_back_off (core/base/back_off.h): the sleeps the GPU backends'
// polling waits take, 50 us doubling to 1 ms.
#include <gtest/gtest.h>

#include <chrono>

#include "base/back_off.h"

namespace chorus {
namespace {

TEST(BackOffTest, BacksOffFrom50MicrosecondsTo1Millisecond) {
  std::chrono::microseconds next{0};
  const auto began = std::chrono::steady_clock::now();
  const long expected[] = {100, 200, 400, 800, 1000, 1000};
  for (long after : expected) {
    sleep_and_back_off(&next);
    EXPECT_EQ(next.count(), after);
  }
  // It slept: 50 + 100 + 200 + 400 + 800 + 1000 us at least.
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::microseconds(2550));
}

}  // namespace
}  // namespace chorus
