#include "runtime/tensor_queue.h"

#include <algorithm>
#include <unordered_set>

namespace chorus {

// Only the add that makes the new list non-empty wakes the background
// thread: it checks for new work after every wake-up before it sleeps again,
// so the later adds of a burst find it awake or already woken.
Status TensorQueue::add(std::vector<TensorEntry> entries) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_.ok()) return closed_;
    std::unordered_set<std::string> names;
    for (const auto& entry : entries) {
      const std::string& name = entry.request.name;
      const bool repeated = entries.size() > 1 && !names.insert(name).second;
      if (repeated || in_flight_.count(name)) return already_in_flight(name);
    }
    wake = new_entries_.empty();
    for (auto& entry : entries) hold(insert(entry.request.name), std::move(entry));
  }
  if (wake) wake_->notify();
  return Status::OK();
}

Status TensorQueue::add(TensorEntry&& entry) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_.ok()) return closed_;
    Held* held = insert(entry.request.name);
    if (held == nullptr) return already_in_flight(entry.request.name);
    wake = new_entries_.empty();
    hold(held, std::move(entry));
  }
  if (wake) wake_->notify();
  return Status::OK();
}

Status TensorQueue::already_in_flight(const std::string& name) const {
  return Status::InvalidArgument("A collective named '" + name + "' is already in flight on rank " +
                                 std::to_string(rank_));
}

TensorQueue::Held* TensorQueue::insert(const std::string& name) {
  if (spare_nodes_.empty()) {
    auto [it, inserted] = in_flight_.try_emplace(name);
    return inserted ? &it->second : nullptr;
  }
  InFlight::node_type& node = spare_nodes_.back();
  node.key() = name;  // fits in the key's capacity when names repeat
  auto result = in_flight_.insert(std::move(node));
  if (!result.inserted) {
    node = std::move(result.node);
    return nullptr;
  }
  spare_nodes_.pop_back();
  return &result.position->second;
}

void TensorQueue::hold(Held* held, TensorEntry&& entry) {
  held->entry = std::move(entry);
  held->request_taken = false;
  new_entries_.push_back(held);
  new_count_.fetch_add(1, std::memory_order_release);
  held_count_.fetch_add(1, std::memory_order_release);
  arrivals_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<Request> TensorQueue::take_new_requests() {
  std::vector<Request> out;
  std::lock_guard<std::mutex> lock(mutex_);
  out.reserve(new_entries_.size());
  for (Held* held : new_entries_) {
    out.push_back(held->entry.request);
    held->request_taken = true;
  }
  // clear() keeps the capacity: the next burst of adds does not regrow it.
  new_entries_.clear();
  new_count_.store(0, std::memory_order_release);
  return out;
}

TensorEntry TensorQueue::remove(InFlight::iterator it) {
  if (!it->second.request_taken) {
    new_entries_.erase(std::find(new_entries_.begin(), new_entries_.end(), &it->second));
    new_count_.store(new_entries_.size(), std::memory_order_release);
  }
  InFlight::node_type node = in_flight_.extract(it);
  held_count_.store(in_flight_.size(), std::memory_order_release);
  TensorEntry entry = std::move(node.mapped().entry);
  if (spare_nodes_.size() < kMaxSpareNodes) spare_nodes_.push_back(std::move(node));
  return entry;
}

std::optional<TensorEntry> TensorQueue::take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_flight_.find(name);
  if (it == in_flight_.end()) return std::nullopt;
  return remove(it);
}

Status TensorQueue::closed_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

std::vector<std::optional<TensorEntry>> TensorQueue::take_all_of(const std::vector<Response>& responses) {
  std::vector<std::optional<TensorEntry>> out;
  out.reserve(responses.size());
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Response& response : responses) {
    auto it = in_flight_.find(response.name);
    if (it == in_flight_.end()) {
      out.emplace_back();
      continue;
    }
    out.emplace_back(remove(it));
  }
  return out;
}

std::vector<TensorEntry> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = reason;
  closed_flag_.store(true, std::memory_order_release);
  std::vector<TensorEntry> out;
  out.reserve(in_flight_.size());
  for (auto& item : in_flight_) out.push_back(std::move(item.second.entry));
  in_flight_.clear();
  held_count_.store(0, std::memory_order_release);
  new_entries_.clear();
  new_count_.store(0, std::memory_order_release);
  return out;
}

}  // namespace chorus
