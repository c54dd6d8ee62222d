#include "tensor_queue.h"

#include <unordered_set>

namespace chorus {

Status TensorQueue::add(std::vector<TensorEntry> entries) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_.ok()) return closed_;
    std::unordered_set<std::string> names;
    for (const auto& entry : entries) {
      const std::string& name = entry.request.name;
      const bool repeated = entries.size() > 1 && !names.insert(name).second;
      if (repeated || in_flight_.count(name)) {
        return Status::InvalidArgument("A collective named '" + name +
                                       "' is already in flight on rank " + std::to_string(rank_));
      }
    }
    new_count_.fetch_add(entries.size(), std::memory_order_release);
    arrivals_.fetch_add(entries.size(), std::memory_order_relaxed);
    for (auto& entry : entries) {
      new_requests_.push_back(entry.request);
      std::string name = entry.request.name;
      in_flight_.emplace(std::move(name), std::move(entry));
    }
  }
  wake_->notify();
  return Status::OK();
}

std::vector<Request> TensorQueue::take_new_requests() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Request> out;
  out.swap(new_requests_);
  new_count_.store(0, std::memory_order_release);
  return out;
}

std::optional<TensorEntry> TensorQueue::take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_flight_.find(name);
  if (it == in_flight_.end()) return std::nullopt;
  TensorEntry entry = std::move(it->second);
  in_flight_.erase(it);
  return entry;
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
    out.emplace_back(std::move(it->second));
    in_flight_.erase(it);
  }
  return out;
}

std::vector<TensorEntry> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = reason;
  closed_flag_.store(true, std::memory_order_release);
  std::vector<TensorEntry> out;
  out.reserve(in_flight_.size());
  for (auto& item : in_flight_) out.push_back(std::move(item.second));
  in_flight_.clear();
  new_requests_.clear();
  new_count_.store(0, std::memory_order_release);
  return out;
}

}  // namespace chorus
