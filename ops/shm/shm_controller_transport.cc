#include "ops/shm/shm_controller_transport.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace chorus {
namespace {

constexpr int kSets = 2;

}  // namespace

size_t ShmControllerTransport::data_bytes(int ranks, size_t max_words) {
  return static_cast<size_t>(kSets) * static_cast<size_t>(ranks) * max_words * sizeof(uint64_t);
}

ShmControllerTransport::ShmControllerTransport(std::unique_ptr<ControllerTransport> wrapped,
                                               std::unique_ptr<ShmGroup> group, size_t max_words)
    : wrapped_(std::move(wrapped)), group_(std::move(group)), max_words_(max_words) {}

uint64_t* ShmControllerTransport::slot(uint64_t call, int rank) const {
  const size_t index = static_cast<size_t>(call % kSets) * static_cast<size_t>(group_->size()) +
                       static_cast<size_t>(rank);
  return reinterpret_cast<uint64_t*>(group_->data()) + index * max_words_;
}

Status ShmControllerTransport::allreduce_or(std::vector<uint64_t>* bits) {
  if (bits->size() > max_words_) return wrapped_->allreduce_or(bits);
  ShmSignals& signals = group_->signals();
  const uint64_t call = signals.mine(ShmSignals::kArrived);  // calls this rank has made
  const size_t words = bits->size();
  if (words > 0) std::memcpy(slot(call, group_->rank()), bits->data(), words * sizeof(uint64_t));
  signals.post(ShmSignals::kArrived, call + 1);
  CHORUS_RETURN_IF_ERROR(signals.wait_all(ShmSignals::kArrived, call + 1, [words] {
    return "OR the negotiation bit vectors (" + std::to_string(words) + " words)";
  }));
  for (int r = 0; r < group_->size(); ++r) {
    if (r == group_->rank()) continue;
    const uint64_t* theirs = slot(call, r);
    for (size_t i = 0; i < words; ++i) (*bits)[i] |= theirs[i];
  }
  return Status::OK();
}

}  // namespace chorus
