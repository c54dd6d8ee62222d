// TensorQueue: the hand-off between framework threads and the background
// thread. Framework threads add entries (never blocking on the network); the
// background thread takes the new requests each cycle and later takes each
// entry out when its response runs. Names are unique among entries in
// flight on this rank within their process set.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/message.h"
#include "runtime/tensor_entry.h"
#include "base/wake_signal.h"

namespace chorus {

class TensorQueue {
 public:
  TensorQueue(int rank, WakeSignal* wake) : rank_(rank), wake_(wake) {}

  // Adds all entries or none: fails if a name is already in flight (or
  // repeated within `entries`), or once the queue is closed.
  Status add(std::vector<TensorEntry> entries);
  // The same for one entry (most calls), without a vector of one.
  Status add(TensorEntry&& entry);
  bool has_new() const { return new_count_.load(std::memory_order_acquire) > 0; }
  // How many tensors were ever added; lets the background thread see a
  // burst of enqueues still growing without taking the lock.
  uint64_t arrivals() const { return arrivals_.load(std::memory_order_relaxed); }
  // Whether any entry is in flight (added and not yet taken out).
  bool holds_any() const { return held_count_.load(std::memory_order_acquire) > 0; }
  // The requests added since the last call, in the order they were added.
  std::vector<Request> take_new_requests();
  // Removes the entry for `key` (tensor_key(): names are unique within
  // their process set); nullopt when this rank has none (a joined rank
  // contributing zeros).
  std::optional<TensorEntry> take(const std::string& key);
  // take() for each response's tensor, under one lock.
  std::vector<std::optional<TensorEntry>> take_all_of(const std::vector<Response>& responses);
  // Removes every entry of a process set (the set is being removed).
  std::vector<TensorEntry> take_set(int32_t process_set);
  // Refuses further adds with `reason` and returns every entry still held.
  std::vector<TensorEntry> close(const Status& reason);
  // OK while open, else the reason it was closed.
  Status closed_reason() const;
  bool closed() const { return closed_flag_.load(std::memory_order_acquire); }

 private:
  const int rank_;
  WakeSignal* wake_;
  mutable std::mutex mutex_;
  struct Held {
    TensorEntry entry;
    bool request_taken = false;  // by take_new_requests()
  };
  using InFlight = std::unordered_map<std::string, Held>;
  // Under the lock: a map node for `name`, or nullptr when the name is in
  // flight. One hash of the name; a spare node when there is one.
  Held* insert(const std::string& name);
  // Under the lock, with the name's node inserted: the entry is in flight
  // and new.
  void hold(Held* held, TensorEntry&& entry);
  Status already_in_flight(const Request& request) const;
  // Removes a held entry; one whose request was not taken yet also leaves
  // new_entries_ (rare: the executor only takes negotiated names).
  TensorEntry remove(InFlight::iterator it);

  InFlight in_flight_;
  // Nodes of removed entries, reused by later adds. A training step enqueues
  // the same names every time: a reused node's key already fits the name, so
  // an add allocates neither node nor key (a burst of hundreds of them fell
  // off malloc's per-thread caches into its slow paths).
  std::vector<InFlight::node_type> spare_nodes_;
  static constexpr size_t kMaxSpareNodes = 4096;
  // The entries added since the last take_new_requests(), in add order.
  // Their requests are copied out by the background thread, which also
  // frees the copies: a framework thread's enqueue stays short, and memory
  // is not allocated on one thread only to be freed on another. (Map nodes
  // keep their address until removed.)
  std::vector<Held*> new_entries_;
  Status closed_;  // ok while open
  std::atomic<size_t> new_count_{0};
  std::atomic<bool> closed_flag_{false};
  std::atomic<uint64_t> arrivals_{0};
  std::atomic<size_t> held_count_{0};  // in_flight_.size(), readable without the lock
};

}  // namespace chorus
