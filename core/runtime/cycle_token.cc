#include "runtime/cycle_token.h"

#include <algorithm>

namespace chorus {

bool CycleToken::try_take() {
  if (!mutex_.try_lock()) return false;
  taken_at_ = Clock::now();
  return true;
}

void CycleToken::hand_back(bool wake_background) {
  // Past its first look, a parked background thread may sleep on for up to
  // kLongestParkedCheck: wake it rather than leave the job without a driver.
  const bool parked_long = Clock::now() - taken_at_ >= kFirstParkedCheck;
  mutex_.unlock();
  if (wake_background || parked_long) parked_.notify();
}

void CycleToken::take_for_background() {
  auto check = std::chrono::duration_cast<Clock::duration>(kFirstParkedCheck);
  while (!mutex_.try_lock()) {
    parked_.wait_until(Clock::now() + check);
    check = std::min(check * 2, std::chrono::duration_cast<Clock::duration>(kLongestParkedCheck));
  }
}

}  // namespace chorus
