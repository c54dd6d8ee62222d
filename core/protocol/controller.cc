// The per-rank half of the negotiation protocol (see controller.h): pending
// requests, the bit-vector fast path, and the exchange with the coordinator.
// The coordinator's table lives in controller_coordinator.cc.
//
// A cache capacity of 0 leaves only the flags word in the bit vector: the
// OR allreduce still runs every cycle so that all ranks agree whether the
// slow path (gather + broadcast) runs, and idle cycles stay cheap.
#include "protocol/controller.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

namespace chorus {
namespace {

// Sections of the bit vector, each words() long, then one flags word.
enum Section : size_t { kNotReady = 0, kReady = 1, kInvalid = 2, kFlags = 3 };
constexpr uint64_t kFlagSlowPath = 1;  // some rank has requests for the coordinator

void set_slot(uint64_t* set, uint32_t slot) { set[slot / 64] |= uint64_t{1} << (slot % 64); }
bool has_slot(const uint64_t* set, uint32_t slot) { return (set[slot / 64] >> (slot % 64)) & 1; }

void set_bit(std::vector<uint64_t>* bits, size_t words, Section section, uint32_t slot) {
  set_slot(bits->data() + section * words, slot);
}

bool test_bit(const std::vector<uint64_t>& bits, size_t words, Section section, uint32_t slot) {
  return has_slot(bits.data() + section * words, slot);
}

// Calls visit(slot) for each set bit of `section`, in ascending slot order
// (the same on every rank), skipping empty words: the capacity is usually
// far larger than the number of cached tensors.
template <typename Visit>
void for_each_set_bit(const std::vector<uint64_t>& bits, size_t words, Section section, Visit&& visit) {
  for (size_t i = 0; i < words; ++i) {
    for (uint64_t word = bits[section * words + i]; word != 0; word &= word - 1) {
      visit(static_cast<uint32_t>(i * 64 + static_cast<size_t>(__builtin_ctzll(word))));
    }
  }
}

bool cacheable(Response::Type type) {
  switch (type) {
    case Response::Type::kAllreduce:
    case Response::Type::kAllgather:
    case Response::Type::kBroadcast:
    case Response::Type::kAlltoall:
    case Response::Type::kReducescatter:
    case Response::Type::kBarrier:
      return true;
    default:
      return false;
  }
}

// A pending request's identity: its process set and a view of its name.
struct SetAndName {
  int32_t set;
  std::string_view name;
  bool operator==(const SetAndName& o) const { return set == o.set && name == o.name; }
};
struct SetAndNameHash {
  size_t operator()(const SetAndName& k) const {
    return std::hash<std::string_view>()(k.name) ^ (static_cast<size_t>(k.set) * 0x9e3779b97f4a7c15ULL);
  }
};

uint32_t cache_capacity(const Config& config) {
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  return static_cast<uint32_t>(std::clamp<int64_t>(config.cache_capacity, 0, kMax));
}

}  // namespace

Controller::Controller(ControllerTransport* transport, const Config& config, size_t coordinator_words)
    : transport_(transport),
      rank_(transport->rank()),
      size_(transport->size()),
      cache_(cache_capacity(config)),
      outgoing_words_(coordinator_words, 0),
      received_words_(coordinator_words, 0),
      stall_(config.stall_check_seconds, config.stall_shutdown_seconds, transport->size()),
      stall_enabled_(config.stall_check_seconds > 0 || config.stall_shutdown_seconds > 0) {}

void Controller::set_coordinator_words(const std::vector<uint64_t>& words) {
  if (rank_ != 0) return;
  std::fill(outgoing_words_.begin(), outgoing_words_.end(), 0);
  std::copy_n(words.begin(), std::min(words.size(), outgoing_words_.size()), outgoing_words_.begin());
}

std::optional<Controller::Clock::time_point> Controller::next_deadline() const {
  if (rank_ != 0 || !stall_enabled_) return std::nullopt;
  return stall_.next_deadline();
}

Status Controller::negotiate(std::vector<Request> new_requests, std::vector<Response>* responses,
                             Clock::time_point now) {
  responses->clear();
  ++stats_.cycles;
  accept(std::move(new_requests));

  std::vector<uint64_t> bits;
  CHORUS_RETURN_IF_ERROR(build_bits(now, &bits));
  CHORUS_RETURN_IF_ERROR(transport_->allreduce_or(&bits));
  std::copy(bits.end() - static_cast<std::ptrdiff_t>(received_words_.size()), bits.end(), received_words_.begin());
  const bool evicted = evict_invalid(bits);
  take_fast_path(bits, responses);
  if (evicted || (bits[kFlags * words()] & kFlagSlowPath)) {
    CHORUS_RETURN_IF_ERROR(run_slow_path(responses));
  }

  // Forget resolved requests, keeping submission order for the rest.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const PendingRequest& p) { return p.resolved; }),
                 pending_.end());
  // A request that is neither with the coordinator nor a cache hit (its slot
  // was reused for another response this cycle) must be sent next cycle even
  // if no rank enqueues anything new.
  needs_cycle_ = false;
  for (const PendingRequest& p : pending_) {
    uint32_t slot = 0;
    if (!p.sent_to_coordinator && cache_.lookup(p.request, &slot) != ResponseCache::Lookup::kHit) {
      needs_cycle_ = true;
    }
  }
  if (rank_ == 0 && stall_enabled_) feed_stall_inspector(now);
  return Status::OK();
}

void Controller::accept(std::vector<Request> new_requests) {
  pending_.reserve(pending_.size() + new_requests.size());
  for (Request& request : new_requests) {
    request.rank = rank_;
    if (request.op == OpType::kJoin || request.op == OpType::kShutdown || request.op == OpType::kFailProcessSet) {
      if (request.op == OpType::kJoin) joined_ = true;
      control_requests_.push_back(std::move(request));
      continue;
    }
    pending_.push_back(PendingRequest{std::move(request)});
  }
}

// The tensor queue refuses a second collective under an in-flight name;
// reaching this is a bug in the caller, and the runtime must stop.
Status Controller::already_in_flight(const std::string& name) const {
  return Status::InvalidArgument("A collective named '" + name + "' is already in flight on rank " +
                                 std::to_string(rank_));
}

Status Controller::build_bits(Clock::time_point now, std::vector<uint64_t>* out) {
  const size_t w = words();
  std::vector<uint64_t>& bits = *out;
  bits.assign(3 * w + 1 + outgoing_words_.size(), 0);
  if (rank_ == 0) std::copy(outgoing_words_.begin(), outgoing_words_.end(), bits.begin() + 3 * w + 1);
  bool slow_path = false;

  if (rank_ == 0 && stall_enabled_) {
    if (auto warning = stall_.check(now)) CHORUS_LOG(kWarning, *warning);
    // Partially ready cached tensors hide which ranks are missing; evicting
    // them makes every rank re-send, so the table learns who is missing.
    for (const std::string& name : stall_.cached_to_invalidate(now)) {
      if (auto slot = cache_.slot_of(name)) set_bit(&bits, w, kInvalid, *slot);
    }
    stall_shutdown_ = stall_.shutdown_reason(now);
    slow_path = stall_shutdown_.has_value();
  }

  claimed_.assign(w, 0);
  pending_by_slot_.resize(cache_.capacity());
  for (size_t i = 0; i < pending_.size(); ++i) {
    PendingRequest& p = pending_[i];
    p.send_now = false;
    if (p.sent_to_coordinator) continue;
    uint32_t slot = 0;
    const ResponseCache::Lookup found = cache_.lookup(p.request, &slot);
    if (found != ResponseCache::Lookup::kMiss) {
      // A slot holds one name: two pending requests on it share their name.
      if (has_slot(claimed_.data(), slot)) return already_in_flight(p.request.name);
      set_slot(claimed_.data(), slot);
      pending_by_slot_[slot] = static_cast<uint32_t>(i);
    }
    switch (found) {
      case ResponseCache::Lookup::kHit:
        set_bit(&bits, w, kReady, slot);
        break;
      case ResponseCache::Lookup::kChanged:
        set_bit(&bits, w, kInvalid, slot);
        p.send_now = true;
        break;
      case ResponseCache::Lookup::kMiss:
        p.send_now = true;
        break;
    }
    slow_path = slow_path || p.send_now;
  }
  // Every cached slot this rank has no hit for holds the others back.
  const std::vector<uint64_t>& occupied = cache_.occupied_words();
  // Nor does a slot of a process set this rank is not in: the AND then
  // yields the slots ready on every member of their set.
  const std::vector<uint64_t>& foreign = cache_.foreign_words();
  for (size_t i = 0; i < w; ++i) bits[kNotReady * w + i] = occupied[i] & ~foreign[i] & ~bits[kReady * w + i];
  if (joined_) {
    // A joined rank contributes zeros to allreduces, so it never holds one
    // back; it does not mark them ready either, so they fire only when some
    // rank that has not joined asks for them. Join concerns the global set.
    // Other cached collectives of the global set cannot run without it:
    // evicting them sends the others' requests to the coordinator, which
    // fails them naming the joined ranks. (Barriers are never hits: each has
    // a name of its own.)
    std::vector<uint32_t> zeros_given;
    for_each_set_bit(bits, w, kNotReady, [&](uint32_t slot) {
      const Response& cached = cache_.response(slot);
      if (cached.process_set != 0) return;
      if (cached.type == Response::Type::kAllreduce) {
        zeros_given.push_back(slot);
      } else if (cached.type != Response::Type::kBarrier) {
        set_bit(&bits, w, kInvalid, slot);
      }
    });
    for (uint32_t slot : zeros_given) bits[kNotReady * w + slot / 64] &= ~(uint64_t{1} << (slot % 64));
  }
  if (slow_path || !control_requests_.empty()) bits[kFlags * w] |= kFlagSlowPath;
  return Status::OK();
}

bool Controller::evict_invalid(const std::vector<uint64_t>& bits) {
  const size_t w = words();
  bool evicted = false;
  for_each_set_bit(bits, w, kInvalid, [&](uint32_t slot) {
    if (!cache_.occupied(slot)) return;
    cache_.evict(slot);
    evicted = true;
    // The other ranks' requests for this name now go to the coordinator, so
    // ours must too, in this same slow path. Every unsent request of ours
    // looked its name up this cycle: if it has this slot, it claimed it.
    if (has_slot(claimed_.data(), slot)) pending_[pending_by_slot_[slot]].send_now = true;
  });
  return evicted;
}

void Controller::take_fast_path(const std::vector<uint64_t>& bits,
                                std::vector<Response>* responses) {
  const size_t w = words();
  partial_cached_.clear();
  responses->reserve(pending_.size());
  for_each_set_bit(bits, w, kReady, [&](uint32_t slot) {
    if (!cache_.occupied(slot)) return;
    if (test_bit(bits, w, kNotReady, slot)) {
      partial_cached_.push_back(tensor_key(cache_.response(slot)));
      return;
    }
    if (has_slot(claimed_.data(), slot)) {
      // A resolved request is dropped at the end of the cycle, unread (the
      // slow path skips it), so its name moves into the response.
      PendingRequest& mine = pending_[pending_by_slot_[slot]];
      mine.resolved = true;
      cache_.append_named(slot, std::move(mine.request.name), responses);
    } else {
      // A joined rank has no request of its own for the slot.
      responses->push_back(cache_.response(slot));
    }
    cache_.touch(slot);
    ++stats_.cache_hits;
  });
}

Status Controller::run_slow_path(std::vector<Response>* responses) {
  ++stats_.slow_path_cycles;
  // Names are looked up only here, once per slow path: the index holds views
  // of pending_'s names, which stays as it is until the cycle ends. A name
  // is unique within its set. The requests the fast path resolved gave
  // their names to its responses; none of them goes to the coordinator, and
  // build_bits() already refused a second request under a cached name.
  std::unordered_map<SetAndName, PendingRequest*, SetAndNameHash> by_name;
  by_name.reserve(pending_.size());
  for (PendingRequest& p : pending_) {
    if (p.resolved) continue;
    if (!by_name.emplace(SetAndName{p.request.process_set, p.request.name}, &p).second) {
      return already_in_flight(p.request.name);
    }
  }
  std::vector<Request> mine;
  for (PendingRequest& p : pending_) {
    if (!p.send_now) continue;
    p.send_now = false;
    p.sent_to_coordinator = true;
    mine.push_back(p.request);
  }
  mine.insert(mine.end(), control_requests_.begin(), control_requests_.end());
  control_requests_.clear();
  std::vector<std::string> gathered;
  CHORUS_RETURN_IF_ERROR(transport_->gather_to_coordinator(serialize_requests(mine), &gathered));

  std::vector<Response> list;
  std::string blob;
  Status corrupt;
  if (rank_ == 0) {
    std::vector<std::vector<Request>> by_rank(size_);
    for (int r = 0; r < size_ && corrupt.ok(); ++r) {
      Status parsed = r < static_cast<int>(gathered.size())
                          ? parse_requests(gathered[r], &by_rank[r])
                          : Status::Internal("corrupt negotiation message: none from rank " +
                                             std::to_string(r));
      if (!parsed.ok()) corrupt = Status::Internal(parsed.message() + " (from rank " +
                                                   std::to_string(r) + ")");
    }
    if (corrupt.ok()) {
      list = coordinate(by_rank);
    } else {
      // The other ranks are already waiting for the broadcast: tell them to
      // stop instead of leaving them blocked.
      Response stop;
      stop.type = Response::Type::kShutdown;
      stop.error_message = corrupt.message();
      list.push_back(std::move(stop));
    }
    blob = serialize_responses(list);
  }
  CHORUS_RETURN_IF_ERROR(transport_->broadcast_from_coordinator(&blob));
  if (!corrupt.ok()) return corrupt;
  if (rank_ != 0) CHORUS_RETURN_IF_ERROR(parse_responses(blob, &list));

  for (Response& response : list) {
    auto it = by_name.find(SetAndName{response.process_set, response.name});
    finish(response, it == by_name.end() ? nullptr : it->second);
    responses->push_back(std::move(response));
  }
  return Status::OK();
}

void Controller::finish(const Response& response, PendingRequest* mine) {
  if (cacheable(response.type)) {
    std::optional<Request> local;
    if (mine != nullptr) local = mine->request;
    cache_.put(response, local, is_member(response.process_set));
  }
  switch (response.type) {
    case Response::Type::kAddProcessSet: {
      std::vector<int>& members = set_members_[response.set_id];
      members.assign(response.set_ranks.begin(), response.set_ranks.end());
      if (mine != nullptr) mine->resolved = true;
      break;
    }
    case Response::Type::kRemoveProcessSet:
      forget_set(response.set_id);
      if (mine != nullptr) mine->resolved = true;
      break;
    case Response::Type::kFailProcessSet:
      set_failed(response);
      break;
    case Response::Type::kJoin:
      joined_ = false;  // every rank has joined; the next join starts afresh
      break;
    case Response::Type::kShutdown:
      break;  // the runtime fails everything still pending
    default:
      if (mine != nullptr) mine->resolved = true;
      break;
  }
}

const std::vector<int>* Controller::members(int32_t set) const {
  auto it = set_members_.find(set);
  return it == set_members_.end() ? nullptr : &it->second;
}

bool Controller::is_member(int32_t set) const {
  if (set == 0) return true;
  const std::vector<int>* ranks = members(set);
  return ranks != nullptr && std::binary_search(ranks->begin(), ranks->end(), rank_);
}

void Controller::forget_set(int32_t set) {
  set_members_.erase(set);
  failed_sets_.erase(set);
  drop_set_work(set);
}

void Controller::set_failed(const Response& failed) {
  const std::vector<int>* ranks = members(failed.set_id);
  if (ranks == nullptr) return;
  failed_sets_.emplace(failed.set_id,
                       set_failure_text(failed.set_id, *ranks, failed.failing_rank(), failed.error_message));
  drop_set_work(failed.set_id);
}

void Controller::drop_set_work(int32_t set) {
  // Every rank evicts the same slots (the cache is the same everywhere).
  for (uint32_t slot : cache_.slots_of_set(set)) cache_.evict(slot);
  // The runtime fails this rank's entries of the set; their requests are
  // dropped here, and the coordinator drops what it collected for them.
  for (PendingRequest& p : pending_) {
    if (p.request.process_set == set) p.resolved = true;
  }
  drop_table_entries(set);
}

void Controller::drop_table_entries(int32_t set) {
  std::vector<std::string> still_waiting;
  for (const std::string& key : table_order_) {
    auto it = table_.find(key);
    if (it->second.by_rank.begin()->second.process_set == set) {
      table_.erase(it);
    } else {
      still_waiting.push_back(key);
    }
  }
  table_order_ = std::move(still_waiting);
}

}  // namespace chorus
