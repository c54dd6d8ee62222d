// WakeSignal: how framework threads wake the background thread. A flag under
// a mutex plus a condition variable: notify() never blocks on the network,
// and a waiter sleeps instead of spinning.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace chorus {

class WakeSignal {
 public:
  using Clock = std::chrono::steady_clock;

  void notify() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      notified_ = true;
    }
    cv_.notify_one();
  }

  // Sleeps until notify() or the deadline; clears the flag. Returns whether
  // it was notified.
  bool wait_until(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_until(lock, deadline, [this] { return notified_; });
    const bool was = notified_;
    notified_ = false;
    return was;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace chorus
