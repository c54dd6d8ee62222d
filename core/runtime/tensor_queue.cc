#include "runtime/tensor_queue.h"

#include <algorithm>
#include <unordered_set>

namespace chorus {
namespace {

// The in-flight key of a request or response: its name on the global set
// (no copy), else tensor_key() built in `scratch`.
template <typename Message>
const std::string& key_of(const Message& m, std::string* scratch) {
  if (m.process_set == 0) return m.name;
  *scratch = tensor_key(m.process_set, m.name);
  return *scratch;
}

}  // namespace

// Only the add that makes the new list non-empty wakes the background
// thread: it checks for new work after every wake-up before it sleeps again,
// so the later adds of a burst find it awake or already woken.
Status TensorQueue::add(std::vector<TensorEntry> entries) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_.ok()) return closed_;
    std::unordered_set<std::string> names;
    std::string scratch;
    for (const auto& entry : entries) {
      const std::string& key = key_of(entry.request, &scratch);
      const bool repeated = entries.size() > 1 && !names.insert(key).second;
      if (repeated || in_flight_.count(key)) return already_in_flight(entry.request);
    }
    wake = new_entries_.empty();
    for (auto& entry : entries) hold(insert(key_of(entry.request, &scratch)), std::move(entry));
  }
  if (wake) wake_->notify();
  return Status::OK();
}

Status TensorQueue::add(TensorEntry&& entry) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_.ok()) return closed_;
    std::string scratch;
    Held* held = insert(key_of(entry.request, &scratch));
    if (held == nullptr) return already_in_flight(entry.request);
    wake = new_entries_.empty();
    hold(held, std::move(entry));
  }
  if (wake) wake_->notify();
  return Status::OK();
}

Status TensorQueue::already_in_flight(const Request& request) const {
  const std::string where = request.process_set == 0 ? "" : " in process set " + std::to_string(request.process_set);
  return Status::InvalidArgument("A collective named '" + request.name + "' is already in flight" + where +
                                 " on rank " + std::to_string(rank_));
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

std::optional<TensorEntry> TensorQueue::take(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_flight_.find(key);
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
  std::string scratch;
  for (const Response& response : responses) {
    auto it = in_flight_.find(key_of(response, &scratch));
    if (it == in_flight_.end()) {
      out.emplace_back();
      continue;
    }
    out.emplace_back(remove(it));
  }
  return out;
}

std::vector<TensorEntry> TensorQueue::take_set(int32_t process_set) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<InFlight::iterator> of_set;
  for (auto it = in_flight_.begin(); it != in_flight_.end(); ++it) {
    if (it->second.entry.request.process_set == process_set) of_set.push_back(it);
  }
  std::vector<TensorEntry> out;
  out.reserve(of_set.size());
  for (InFlight::iterator it : of_set) out.push_back(remove(it));
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
