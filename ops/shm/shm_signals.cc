#include "ops/shm/shm_signals.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <ctime>

#include "base/futex.h"
#include "ops/process_liveness.h"

namespace chorus {

// 128-byte lines: adjacent-line prefetch makes 64-byte neighbours share
// traffic on x86.
struct alignas(128) ShmSignals::Doorbell {
  std::atomic<uint32_t> word;      // bumped by every post; futex address
  std::atomic<uint32_t> sleepers;  // waiters inside (or about to enter) futex_wait
};
// The counters and pid share the first line; the failure reason, written
// at most once, follows them.
struct alignas(128) ShmSignals::RankLine {
  std::atomic<uint64_t> counters[kNumCounters];
  std::atomic<int64_t> pid;
  std::atomic<int32_t> job_rank;
  std::atomic<uint32_t> failed;  // set (release) after `reason` is written
  char reason[200];              // NUL-terminated, truncated
};

namespace {

using Clock = std::chrono::steady_clock;

// The segment is shared between processes: the atomics must not hide a lock.
static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free,
              "shared-memory signals need lock-free atomics");

// Pause-spins before the first yield: a peer on another core usually posts
// within a microsecond or two, and a syscall would cost more.
constexpr int kPauseSpins = 64;
// How long a waiter polls (yielding) before it sleeps on the futex. A rank
// waiting inside a collective has nothing else to run (its framework thread
// waits for the result), and a yield still lets any other runnable thread
// have the core. A sleeper costs the rank that posts a futex wake-up, and
// itself the wake-up of a halted core: polling longer shortened a training
// step whose ranks reached the allreduce apart and made no difference otherwise
// (docs/MEASUREMENTS.md, "Waiting inside a collective").
constexpr auto kPollTime = std::chrono::microseconds(1000);
// Longest single futex sleep: how often a sleeping waiter checks its peers.
constexpr long kSliceNanoseconds = 10'000'000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

const char* counter_verb(ShmSignals::Counter counter) {
  return counter == ShmSignals::kArrived ? "copy in" : "reduce";
}

}  // namespace

size_t ShmSignals::bytes(int ranks) {
  return sizeof(Doorbell) + sizeof(RankLine) * static_cast<size_t>(ranks);
}

ShmSignals::ShmSignals(void* memory, int ranks, int rank, std::chrono::milliseconds timeout)
    : doorbell_(static_cast<Doorbell*>(memory)),
      lines_(reinterpret_cast<RankLine*>(static_cast<char*>(memory) + sizeof(Doorbell))),
      ranks_(ranks),
      rank_(rank),
      timeout_(timeout) {}

void ShmSignals::set_my_identity(pid_t pid, int job_rank) {
  lines_[rank_].pid.store(pid);
  lines_[rank_].job_rank.store(job_rank);
}

pid_t ShmSignals::pid_of(int rank) const { return static_cast<pid_t>(lines_[rank].pid.load()); }

int ShmSignals::job_rank_of(int rank) const { return lines_[rank].job_rank.load(); }

uint64_t ShmSignals::mine(Counter counter) const { return lines_[rank_].counters[counter].load(); }

void ShmSignals::post(Counter counter, uint64_t value) {
  lines_[rank_].counters[counter].store(value);
  ring_doorbell();
}

void ShmSignals::ring_doorbell() {
  // Sequentially consistent: a waiter that registered as a sleeper before
  // this load is woken; one that registers after it sees the new counter (or
  // the new word, which makes its futex_wait return at once).
  doorbell_->word.fetch_add(1);
  if (doorbell_->sleepers.load() > 0) {
    futex_wake(&doorbell_->word, INT_MAX);
  }
}

void ShmSignals::post_failure(const std::string& reason) {
  RankLine& line = lines_[rank_];
  if (line.failed.load() != 0) return;
  const size_t n = std::min(reason.size(), sizeof(line.reason) - 1);
  std::memcpy(line.reason, reason.data(), n);
  line.reason[n] = '\0';
  line.failed.store(1, std::memory_order_release);
  ring_doorbell();
}

Status ShmSignals::posted_failure(Counter counter, uint64_t target, const Describe& what) const {
  for (int r = 0; r < ranks_; ++r) {
    const RankLine& line = lines_[r];
    if (line.counters[counter].load() >= target || line.failed.load(std::memory_order_acquire) == 0) continue;
    return Status::Aborted("Shared-memory allreduce: rank " + std::to_string(job_rank_of(r)) + " failed (" +
                           line.reason + ") while rank " + std::to_string(job_rank_of(rank_)) +
                           " was waiting for it to " + what() +
                           "; the job cannot continue");
  }
  return Status::OK();
}

bool ShmSignals::all_reached(Counter counter, uint64_t target) const {
  for (int r = 0; r < ranks_; ++r) {
    if (lines_[r].counters[counter].load(std::memory_order_acquire) < target) return false;
  }
  return true;
}

void ShmSignals::sleep_on_doorbell(uint32_t seen) {
  const timespec slice{0, kSliceNanoseconds};
  futex_wait(&doorbell_->word, seen, &slice);
}

Status ShmSignals::check_peers(Counter counter, uint64_t target, Clock::duration waited,
                               const Describe& what) const {
  std::string behind;
  for (int r = 0; r < ranks_; ++r) {
    if (lines_[r].counters[counter].load() >= target) continue;
    const pid_t pid = pid_of(r);
    if (!process_alive(pid)) {
      return Status::Aborted("Shared-memory allreduce: rank " + std::to_string(job_rank_of(r)) + " (pid " +
                             std::to_string(pid) + ") exited while rank " + std::to_string(job_rank_of(rank_)) +
                             " was waiting for it to " + what() + "; the job cannot continue");
    }
    behind += (behind.empty() ? "" : ", ") + std::to_string(job_rank_of(r));
  }
  if (!behind.empty() && waited >= timeout_) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(waited).count();
    return Status::Aborted("Shared-memory allreduce: rank " + std::to_string(job_rank_of(rank_)) + " waited " +
                           std::to_string(seconds) + " s for ranks [" + behind + "] to " + what() +
                           " (they are alive but did not " + counter_verb(counter) +
                           "); the job cannot continue");
  }
  return Status::OK();
}

Status ShmSignals::wait_all(Counter counter, uint64_t target, const Describe& what) {
  if (all_reached(counter, target)) return Status::OK();
  const auto start = Clock::now();
  for (int i = 0;; ++i) {
    if (i < kPauseSpins) {
      cpu_relax();
    } else {
      sched_yield();
    }
    if (all_reached(counter, target)) return Status::OK();
    if (i % 16 == 15 && Clock::now() - start > kPollTime) break;
  }
  CHORUS_RETURN_IF_ERROR(posted_failure(counter, target, what));
  // Posts for other counters wake sleepers too; peers are checked (a
  // /proc read each) at most once per slice, not on every wake-up.
  auto last_check = start;
  while (true) {
    doorbell_->sleepers.fetch_add(1);
    const uint32_t seen = doorbell_->word.load();
    const bool reached = all_reached(counter, target);
    if (!reached) sleep_on_doorbell(seen);
    doorbell_->sleepers.fetch_sub(1);
    if (reached || all_reached(counter, target)) return Status::OK();
    // A failure rings the doorbell: checked on every wake-up, it is seen at once.
    CHORUS_RETURN_IF_ERROR(posted_failure(counter, target, what));
    const auto now = Clock::now();
    if (now - last_check >= std::chrono::nanoseconds(kSliceNanoseconds)) {
      last_check = now;
      CHORUS_RETURN_IF_ERROR(check_peers(counter, target, now - start, what));
    }
  }
}

}  // namespace chorus
