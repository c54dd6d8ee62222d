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
      if (in_flight_.count(name) || !names.insert(name).second) {
        return Status::InvalidArgument("A collective named '" + name +
                                       "' is already in flight on rank " + std::to_string(rank_));
      }
    }
    for (auto& entry : entries) {
      new_requests_.push_back(entry.request);
      std::string name = entry.request.name;
      in_flight_.emplace(std::move(name), std::move(entry));
    }
  }
  wake_->notify();
  return Status::OK();
}

bool TensorQueue::has_new() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !new_requests_.empty();
}

std::vector<Request> TensorQueue::take_new_requests() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Request> out;
  out.swap(new_requests_);
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

std::vector<TensorEntry> TensorQueue::close(const Status& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = reason;
  std::vector<TensorEntry> out;
  out.reserve(in_flight_.size());
  for (auto& item : in_flight_) out.push_back(std::move(item.second));
  in_flight_.clear();
  new_requests_.clear();
  return out;
}

}  // namespace chorus
