#include "base/wake_signal.h"

#include <ctime>

#include "base/futex.h"

namespace chorus {

void WakeWord::ring() {
  // Sequentially consistent, pairing with wait_until(): a waiter that
  // registered as a sleeper before this load is woken; one that registers
  // after it sees the new word and does not sleep.
  word.fetch_add(1);
  if (sleepers.load() > 0) {
    futex_wake(&word, 1);
  }
}

void WakeWord::ring_from_peer() {
  word.fetch_add(1);
  if (peer_wakeable.load() > 0) {
    futex_wake(&word, 1);
  }
}

WakeSignal::WakeSignal() : word_(&own_), consumed_(0) {}

WakeSignal::WakeSignal(WakeWord* shared) : word_(shared), consumed_(shared->word.load()) {}

bool WakeSignal::wait_until(std::optional<Clock::time_point> deadline, bool woken_by_peers) {
  while (true) {
    const uint32_t now_word = word_->word.load();
    if (now_word != consumed_) {
      consumed_ = now_word;
      return true;
    }
    timespec timeout{};
    if (deadline) {
      const auto left = *deadline - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      timeout.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      timeout.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    word_->sleepers.fetch_add(1);
    if (woken_by_peers) word_->peer_wakeable.fetch_add(1);
    if (word_->word.load() == consumed_) futex_wait(&word_->word, consumed_, deadline ? &timeout : nullptr);
    if (woken_by_peers) word_->peer_wakeable.fetch_sub(1);
    word_->sleepers.fetch_sub(1);
  }
}

}  // namespace chorus
