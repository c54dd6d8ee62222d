#include "runtime/process_set_table.h"

#include <algorithm>

#include "protocol/message.h"

namespace chorus {

ProcessSetTable::ProcessSetTable(int world_size) {
  Entry global;
  for (int r = 0; r < world_size; ++r) global.ranks.push_back(r);
  sets_.emplace(0, std::move(global));
}

void ProcessSetTable::add(int32_t id, std::vector<int> ranks) {
  std::lock_guard<std::mutex> lock(mutex_);
  sets_[id] = Entry{std::move(ranks), 0, std::nullopt};
}

std::string ProcessSetTable::fail(int32_t id, const ProcessSetFailure& failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end()) return "";
  if (!it->second.failure) it->second.failure = failure;
  const ProcessSetFailure& first = *it->second.failure;
  return set_failure_text(id, it->second.ranks, first.rank, first.reason);
}

std::optional<ProcessSetFailure> ProcessSetTable::failure(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  return it == sets_.end() ? std::nullopt : it->second.failure;
}

Status ProcessSetTable::usable(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end() || !it->second.failure) return Status::OK();
  const ProcessSetFailure& failure = *it->second.failure;
  return Status::Aborted(set_failure_text(id, it->second.ranks, failure.rank, failure.reason));
}

void ProcessSetTable::remove(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id != 0) sets_.erase(id);
}

Status ProcessSetTable::ranks(int32_t id, std::vector<int>* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sets_.find(id);
  if (it == sets_.end()) {
    return Status::InvalidArgument("process set " + std::to_string(id) +
                                   " does not exist (it was removed, or never added on this job)");
  }
  *out = it->second.ranks;
  return Status::OK();
}

bool ProcessSetTable::contains(int32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sets_.count(id) > 0;
}

std::vector<int32_t> ProcessSetTable::ids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int32_t> out;
  for (const auto& kv : sets_) out.push_back(kv.first);
  return out;
}

std::string ProcessSetTable::next_barrier_name(int32_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return "chorus.barrier." + std::to_string(sets_[id].barriers++);
}

std::string ProcessSetTable::describe(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

Status normalize_process_set_ranks(const std::vector<int>& ranks, int world_size, std::vector<int>* out) {
  const std::string given = ProcessSetTable::describe(ranks);
  if (ranks.empty()) {
    return Status::InvalidArgument("add_process_set got an empty rank list; expected at least one rank in [0, " +
                                   std::to_string(world_size) + ")");
  }
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= world_size) {
      return Status::InvalidArgument("add_process_set got rank " + std::to_string(sorted[i]) + " in " + given +
                                     "; expected ranks in [0, " + std::to_string(world_size) + ")");
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      return Status::InvalidArgument("add_process_set got rank " + std::to_string(sorted[i]) + " twice in " +
                                     given + "; expected each rank at most once");
    }
  }
  *out = std::move(sorted);
  return Status::OK();
}

}  // namespace chorus
