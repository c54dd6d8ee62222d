// The two futex operations the runtime uses, on a 32-bit atomic word that
// may be shared between processes (so never FUTEX_PRIVATE_FLAG).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace chorus {

static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "a futex word must be a plain, lock-free 32-bit int");

// Sleeps while *word == seen, until woken or `timeout` (relative; nullptr:
// none) passes. May return early; callers re-check their condition.
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, const timespec* timeout) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, timeout, nullptr, 0);
}

// Wakes up to `count` threads sleeping on `word`, in any process.
inline void futex_wake(std::atomic<uint32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, count, nullptr, nullptr, 0);
}

}  // namespace chorus
