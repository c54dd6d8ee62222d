// CompletionQueue: collectives whose device work was still running when the
// executor had done its part. A thread of its own waits for each, in the
// order they were started, and completes its handles, so that the background
// thread never waits for a device (Horovod's finalizer thread does this for
// GPU operations). Host work (MPI, shared memory) has finished when the
// executor's calls return and never comes here; the thread starts with the
// first unit that does.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "chorus/event.h"
#include "contracts/work.h"
#include "runtime/tensor_entry.h"

namespace chorus {

// One unit's entries (absent where this rank has none: a joined rank) and
// what must finish before their handles are done.
struct InFlightUnit {
  std::vector<std::optional<TensorEntry>> entries;
  std::vector<Status> own_errors;           // per entry: its output could not be allocated
  WorkPtr work;                             // the collective
  std::shared_ptr<const Event> finished;    // the device's stream past the unit's last work
};

// Marks every entry's handle (its own error, else `status`), then wakes the
// waiters: a waiter woken for the first handle of a batch then finds the
// others done instead of sleeping again on each (on few cores every such
// wake-up preempts the thread that completes the batch).
void complete_entries(std::vector<std::optional<TensorEntry>>& entries, const Status& status,
                      const std::vector<Status>& own_errors = {});

class CompletionQueue {
 public:
  // `on_failure` is called (on the queue's thread) when a collective fails:
  // the rank cannot go on, and the background thread must hear of it.
  explicit CompletionQueue(std::function<void()> on_failure) : on_failure_(std::move(on_failure)) {}
  ~CompletionQueue();  // drains
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  void push(InFlightUnit unit);
  // Units not completed yet.
  size_t in_flight() const;
  // The first failure of a collective; OK while none failed. failed() says
  // whether there is one without taking the lock.
  Status failure() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Blocks until every unit pushed so far has been completed.
  void drain();

 private:
  void run();

  std::function<void()> on_failure_;
  mutable std::mutex mutex_;
  std::condition_variable pushed_;
  std::condition_variable completed_;
  std::deque<InFlightUnit> units_;
  size_t completing_ = 0;  // popped, not yet completed
  Status failure_;
  std::atomic<bool> failed_{false};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace chorus
