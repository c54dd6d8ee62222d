#include "base/back_off.h"

#include <algorithm>
#include <thread>

namespace chorus {

void sleep_and_back_off(std::chrono::microseconds* next) {
  constexpr std::chrono::microseconds kFirst{50};
  constexpr std::chrono::microseconds kLongest{1000};
  const std::chrono::microseconds now = std::clamp(*next, kFirst, kLongest);
  std::this_thread::sleep_for(now);
  *next = std::min(now * 2, kLongest);
}

}  // namespace chorus
