// HandleState: shared between the caller's Handle and the runtime's entry
// (or entries, for a group). The runtime completes it exactly once per
// member; waiters block on a condition variable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chorus/event.h"
#include "chorus/status.h"
#include "chorus/types.h"
#include "protocol/message.h"

namespace chorus {
namespace detail {

// How many threads are blocked in wait() or wait_until() on the process's
// handles. The background thread reads it to tell that a burst of enqueues
// is over: a thread that waits for a result has stopped producing. Handles
// can outlive a runtime, so the count belongs to the process (RuntimeOwner,
// api.cc), not to a runtime; a plain pointer to it, not a shared one, since
// counting references per handle cost ~3% of the 200 x 4 KiB step.
using BlockedWaiters = std::atomic<int>;

// Runs the runtime's cycles on a thread that waits for a result, until the
// result is done (Runtime::run_cycles_until, runtime/cycle_token.h). Like
// the count above it belongs to the process (RuntimeOwner), which finds the
// runtime running at the time; false when nothing ran.
class CycleRunner {
 public:
  virtual ~CycleRunner() = default;
  virtual bool run_cycles_until(const std::function<bool()>& done) = 0;
};

// Work that advances only while a thread drives it: point-to-point transfers
// (core/contracts/point_to_point.h) progress in the threads that test or wait for them,
// not on the background thread. A handle with a progress drives it in
// wait(), wait_until() and test() until it is done.
class HandleProgress {
 public:
  virtual ~HandleProgress() = default;
  // One step that never blocks.
  virtual void poll() = 0;
  // Steps until `finished()` or `deadline` (none: until finished).
  virtual void drive(const std::function<bool()>& finished,
                     std::optional<std::chrono::steady_clock::time_point> deadline) = 0;
};

class HandleState {
 public:
  // `op`: what the handle waits for, which decides the results it has.
  // `blocked`, when given, counts this handle's blocked waiters too;
  // `cycles`, when given, runs cycles in wait() until the handle is done.
  // Both must outlive the state.
  HandleState(std::string name, OpType op, int members, BlockedWaiters* blocked = nullptr,
              CycleRunner* cycles = nullptr)
      : name_(std::move(name)),
        op_(op),
        blocked_(blocked),
        cycles_(cycles),
        members_(members),
        remaining_(members) {}

  const std::string& name() const { return name_; }
  OpType op() const { return op_; }
  // Set once, before the handle is shared with other threads.
  void set_progress(std::shared_ptr<HandleProgress> progress) { progress_ = std::move(progress); }

  // One member finished. The first error wins; the handle is done when every
  // member has finished.
  void complete_member(const Status& status) {
    if (finish_member(status)) notify_done();
  }
  // complete_member() in two steps, so the runtime can mark a whole batch
  // done before waking anyone: a waiter woken for the first handle of a batch
  // then finds the others done instead of sleeping again on each (on few
  // cores every such wake-up preempts the thread that completes the batch).
  // Returns true when this made the handle done; then call notify_done().
  bool finish_member(const Status& status);
  void notify_done() { done_cv_.notify_all(); }
  // Fails the handle at once with `status`, whatever its members are doing
  // (the job lost a rank: the collective they are in may never end); later
  // completions of its members change nothing. From any thread.
  void abandon(const Status& status);
  // A member's device work was handed to its device before it finished:
  // `finished` fires once it has (see completion_event()).
  void set_completion_event(std::shared_ptr<const Event> finished);
  // Results, set by the runtime before complete_member(). `member`: the
  // index in the group of the entry whose output it is.
  void set_output(int member, const Tensor& output, std::shared_ptr<void> storage);
  void set_received_splits(std::vector<int64_t> splits);
  void set_last_joined_rank(int rank);
  // add_process_set: the id every rank gave the new set.
  void set_process_set_id(int32_t id);

  // Blocks until every member's work is on its device, or the handle is
  // done; then the event that fires once that work has finished (done from
  // the start for work that finished before the handle did), or the error.
  Status completion_event(std::shared_ptr<const Event>* out) const;
  Status wait() const;
  // Returns kInProgress if not done by the deadline.
  Status wait_until(std::chrono::steady_clock::time_point deadline) const;
  bool done() const;
  Status status() const;
  int members() const { return members_; }
  // Member 0's output, and every member's in order.
  Tensor output() const;
  std::vector<Tensor> outputs() const;
  std::vector<int64_t> received_splits() const;
  int last_joined_rank() const;
  int32_t process_set_id() const;

 private:
  // Blocks on done_cv_ (mutex_ held by `lock`) until done or `deadline`,
  // counted in blocked_ meanwhile; returns whether done.
  bool block_until_done(std::unique_lock<std::mutex>& lock,
                        std::optional<std::chrono::steady_clock::time_point> deadline) const;
  // done(), without driving a progress.
  bool finished() const;
  // Drives the progress, if any, until done or `deadline`.
  void drive(std::optional<std::chrono::steady_clock::time_point> deadline) const;
  // A wait without a deadline on a collective: runs the cycles it needs on
  // this thread when it can (CycleRunner).
  void run_cycles() const;

  const std::string name_;
  const OpType op_;
  BlockedWaiters* const blocked_;
  CycleRunner* const cycles_;
  std::shared_ptr<HandleProgress> progress_;
  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  const int members_;
  int remaining_;
  int handed_to_device_ = 0;
  std::shared_ptr<const Event> finished_on_device_;  // the last member's
  Status status_;
  // By member, sized by the first set_output(): most handles (allreduces)
  // have none, and each allocation per collective shows in a small step.
  std::vector<Tensor> outputs_;
  std::vector<std::shared_ptr<void>> output_storage_;
  std::vector<int64_t> received_splits_;
  int last_joined_rank_ = -1;
  int32_t process_set_id_ = -1;
};

}  // namespace detail
}  // namespace chorus
