#include "protocol/response_cache.h"

#include <algorithm>
#include <cassert>
#include <functional>

namespace chorus {

ResponseCache::ResponseCache(uint32_t capacity)
    : capacity_(capacity),
      slots_(capacity),
      occupied_words_((static_cast<size_t>(capacity) + 63) / 64, 0),
      foreign_words_(occupied_words_.size(), 0) {
  free_slots_.reserve(capacity);
  for (uint32_t s = capacity; s > 0; --s) free_slots_.push_back(s - 1);
}

ResponseCache::Lookup ResponseCache::lookup(const Request& request, uint32_t* slot) const {
  // The global set's key is the name itself: no key is built for it.
  auto it = request.process_set == 0 ? by_name_.find(request.name) : by_name_.find(tensor_key(request));
  if (it == by_name_.end()) return Lookup::kMiss;
  *slot = it->second;
  const Entry& entry = slots_[it->second];
  // A joined rank caches responses without a request of its own; its first
  // real request for the name is renegotiated, which is rare and always safe.
  if (!entry.local_request) return Lookup::kChanged;
  const Request& mine = *entry.local_request;
  // same_collective tolerates a different first dimension for allgather and
  // alltoall across ranks, but the cached response (first_dims per rank) is
  // only valid for exactly the shape this rank negotiated.
  if (mine.same_collective(request) && mine.shape == request.shape) return Lookup::kHit;
  return Lookup::kChanged;
}

std::optional<uint32_t> ResponseCache::put(const Response& response,
                                           const std::optional<Request>& local_request, bool member) {
  if (capacity_ == 0) return std::nullopt;
  uint32_t slot = 0;
  const std::string key = tensor_key(response);
  auto it = by_name_.find(key);
  if (it != by_name_.end()) {
    // Replacing keeps the slot: every rank does the same, so slots agree.
    slot = it->second;
  } else {
    if (free_slots_.empty()) evict(lru_.back());
    slot = free_slots_.back();
    free_slots_.pop_back();
    Entry& entry = slots_[slot];
    entry.occupied = true;
    occupied_words_[slot / 64] |= uint64_t{1} << (slot % 64);
    lru_.push_front(slot);
    entry.lru_position = lru_.begin();
    by_name_[key] = slot;
  }
  if (member) {
    foreign_words_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  } else {
    foreign_words_[slot / 64] |= uint64_t{1} << (slot % 64);
  }
  Entry& entry = slots_[slot];
  entry.response = response;
  entry.local_request = local_request;
  touch(slot);
  return slot;
}

bool ResponseCache::occupied(uint32_t slot) const {
  return slot < capacity_ && slots_[slot].occupied;
}

const Response& ResponseCache::response(uint32_t slot) const {
  assert(occupied(slot));
  return slots_[slot].response;
}

void ResponseCache::append_named(uint32_t slot, std::string name, std::vector<Response>* out) {
  assert(occupied(slot) && slots_[slot].response.name == name);
  // Copying with the cached name moved aside copies an empty string; the
  // copy is made in place, not moved there.
  Response& cached = slots_[slot].response;
  std::string kept = std::move(cached.name);
  out->push_back(cached);
  cached.name = std::move(kept);
  out->back().name = std::move(name);
}

void ResponseCache::touch(uint32_t slot) {
  if (!occupied(slot)) return;
  Entry& entry = slots_[slot];
  lru_.splice(lru_.begin(), lru_, entry.lru_position);
  entry.lru_position = lru_.begin();
}

void ResponseCache::evict(uint32_t slot) {
  if (!occupied(slot)) return;
  Entry& entry = slots_[slot];
  lru_.erase(entry.lru_position);
  by_name_.erase(tensor_key(entry.response));
  entry = Entry{};
  occupied_words_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  foreign_words_[slot / 64] &= ~(uint64_t{1} << (slot % 64));
  // Keep free slots sorted descending so the lowest free slot is reused
  // first; the order only has to be the same on every rank.
  free_slots_.insert(std::upper_bound(free_slots_.begin(), free_slots_.end(), slot,
                                      std::greater<uint32_t>()),
                     slot);
}

std::optional<uint32_t> ResponseCache::slot_of(const std::string& key) const {
  auto it = by_name_.find(key);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<uint32_t> ResponseCache::slots_of_set(int32_t process_set) const {
  std::vector<uint32_t> out;
  for (uint32_t slot : lru_) {
    if (slots_[slot].response.process_set == process_set) out.push_back(slot);
  }
  return out;
}

}  // namespace chorus
