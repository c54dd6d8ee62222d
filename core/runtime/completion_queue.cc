#include "runtime/completion_queue.h"

namespace chorus {

void complete_entries(std::vector<std::optional<TensorEntry>>& entries, const Status& status,
                      const std::vector<Status>& own_errors) {
  std::vector<detail::HandleState*> done;
  done.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i]) continue;
    const bool own = status.ok() && i < own_errors.size() && !own_errors[i].ok();
    if (entries[i]->handle->finish_member(own ? own_errors[i] : status)) done.push_back(entries[i]->handle.get());
  }
  for (detail::HandleState* handle : done) handle->notify_done();
}

CompletionQueue::~CompletionQueue() {
  drain();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  pushed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CompletionQueue::push(InFlightUnit unit) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    units_.push_back(std::move(unit));
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  }
  pushed_.notify_one();
}

size_t CompletionQueue::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return units_.size() + completing_;
}

Status CompletionQueue::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void CompletionQueue::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [&] { return units_.empty() && completing_ == 0; });
}

void CompletionQueue::run() {
  while (true) {
    InFlightUnit unit;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      pushed_.wait(lock, [&] { return stopping_ || !units_.empty(); });
      if (units_.empty()) return;
      unit = std::move(units_.front());
      units_.pop_front();
      ++completing_;
    }
    // The collective's outcome, then the stream past the unpacking after it.
    const Status status = unit.work->wait();
    if (unit.finished) unit.finished->synchronize();
    complete_entries(unit.entries, status, unit.own_errors);
    bool first_failure = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!status.ok() && failure_.ok()) {
        failure_ = status;
        failed_.store(true, std::memory_order_release);
        first_failure = true;
      }
      --completing_;
    }
    completed_.notify_all();
    if (first_failure && on_failure_) on_failure_();
  }
}

}  // namespace chorus
