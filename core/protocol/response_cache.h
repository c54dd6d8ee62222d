// ResponseCache: responses that were negotiated before, each at a fixed slot
// (its bit in the fast-path bit vector). Every rank applies the same
// operations in the same order, so slots are identical on every rank; each
// rank also remembers its own last request per slot to recognise a hit.
// Least recently used entries are evicted when the cache is full. Entries
// are keyed by (process set, name) (tensor_key()).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/message.h"

namespace chorus {

class ResponseCache {
 public:
  explicit ResponseCache(uint32_t capacity);

  uint32_t capacity() const { return capacity_; }
  size_t size() const { return by_name_.size(); }

  enum class Lookup { kMiss, kHit, kChanged };
  // kHit: `request` matches this rank's cached request for the name (slot in
  // *slot); kChanged: the name is cached with other parameters (slot set).
  Lookup lookup(const Request& request, uint32_t* slot) const;

  // Inserts or replaces the response for its (set, name); `local_request` is
  // this rank's request (absent on a joined rank). `member`: whether this
  // rank belongs to the response's process set. Evicts the least recently
  // used entry when full. Returns the slot, or nullopt when capacity is 0.
  std::optional<uint32_t> put(const Response& response, const std::optional<Request>& local_request,
                              bool member = true);

  bool occupied(uint32_t slot) const;
  // Bit s of word s / 64 is set when slot s is occupied: the controller
  // works on whole words instead of visiting every slot of the capacity.
  const std::vector<uint64_t>& occupied_words() const { return occupied_words_; }
  // The same for the slots whose process set this rank is not in.
  const std::vector<uint64_t>& foreign_words() const { return foreign_words_; }
  const Response& response(uint32_t slot) const;
  // Appends to `out` a copy of the slot's response that takes `name`, which
  // must equal the cached name (the hitting request's own, moved in): a hit
  // then allocates no string for the name, which real tensors' names (longer
  // than the small-string buffer) would cost for every tensor of every step.
  void append_named(uint32_t slot, std::string name, std::vector<Response>* out);
  // Marks a slot as most recently used.
  void touch(uint32_t slot);
  void evict(uint32_t slot);
  // Slot of a cached tensor by its tensor_key(), if any.
  std::optional<uint32_t> slot_of(const std::string& key) const;
  // The occupied slots of a process set.
  std::vector<uint32_t> slots_of_set(int32_t process_set) const;

 private:
  struct Entry {
    bool occupied = false;
    Response response;
    std::optional<Request> local_request;
    std::list<uint32_t>::iterator lru_position;
  };
  uint32_t capacity_;
  std::vector<Entry> slots_;
  std::vector<uint64_t> occupied_words_;
  std::vector<uint64_t> foreign_words_;
  std::vector<uint32_t> free_slots_;  // kept sorted descending so slot 0 is used first
  std::list<uint32_t> lru_;           // front = most recently used
  std::unordered_map<std::string, uint32_t> by_name_;  // by tensor_key()
};

}  // namespace chorus
