// HandleState: shared between the caller's Handle and the runtime's entry
// (or entries, for a group). The runtime completes it exactly once per
// member; waiters block on a condition variable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {
namespace detail {

class HandleState {
 public:
  HandleState(std::string name, int members) : name_(std::move(name)), remaining_(members) {}

  const std::string& name() const { return name_; }

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
  // Results, set by the runtime before complete_member().
  void set_output(const Tensor& output, std::shared_ptr<void> storage);
  void set_received_splits(std::vector<int64_t> splits);
  void set_last_joined_rank(int rank);

  Status wait() const;
  // Returns kInProgress if not done by the deadline.
  Status wait_until(std::chrono::steady_clock::time_point deadline) const;
  bool done() const;
  Status status() const;
  Tensor output() const;
  std::vector<int64_t> received_splits() const;
  int last_joined_rank() const;

 private:
  const std::string name_;
  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  int remaining_;
  Status status_;
  Tensor output_;
  std::shared_ptr<void> output_storage_;
  std::vector<int64_t> received_splits_;
  int last_joined_rank_ = -1;
};

}  // namespace detail
}  // namespace chorus
