// The per-rank half of the negotiation protocol (see controller.h): pending
// requests, the bit-vector fast path, and the exchange with the coordinator.
// The coordinator's table lives in controller_coordinator.cc.
//
// A cache capacity of 0 leaves only the flags word in the bit vector: the
// OR allreduce still runs every cycle so that all ranks agree whether the
// slow path (gather + broadcast) runs, and idle cycles stay cheap.
#include "controller.h"

#include <algorithm>
#include <limits>

namespace chorus {
namespace {

// Sections of the bit vector, each words() long, then one flags word.
enum Section : size_t { kNotReady = 0, kReady = 1, kInvalid = 2, kFlags = 3 };
constexpr uint64_t kFlagSlowPath = 1;  // some rank has requests for the coordinator

void set_bit(std::vector<uint64_t>* bits, size_t words, Section section, uint32_t slot) {
  (*bits)[section * words + slot / 64] |= uint64_t{1} << (slot % 64);
}

bool test_bit(const std::vector<uint64_t>& bits, size_t words, Section section, uint32_t slot) {
  return (bits[section * words + slot / 64] >> (slot % 64)) & 1;
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
  CHORUS_RETURN_IF_ERROR(accept(std::move(new_requests)));

  std::set<std::string> to_send;
  std::vector<uint64_t> bits = build_bits(&to_send, now);
  CHORUS_RETURN_IF_ERROR(transport_->allreduce_or(&bits));
  std::copy(bits.end() - static_cast<std::ptrdiff_t>(received_words_.size()), bits.end(), received_words_.begin());
  const bool evicted = evict_invalid(bits, &to_send);
  take_fast_path(bits, responses);
  if (evicted || (bits[kFlags * words()] & kFlagSlowPath)) {
    CHORUS_RETURN_IF_ERROR(run_slow_path(to_send, responses));
  }

  // Forget resolved names, keeping submission order for the rest.
  pending_order_.erase(std::remove_if(pending_order_.begin(), pending_order_.end(),
                                      [this](const std::string& n) { return !pending_.count(n); }),
                       pending_order_.end());
  // A request that is neither with the coordinator nor a cache hit (its slot
  // was reused for another response this cycle) must be sent next cycle even
  // if no rank enqueues anything new.
  needs_cycle_ = false;
  for (const auto& [name, p] : pending_) {
    uint32_t slot = 0;
    if (!p.sent_to_coordinator && cache_.lookup(p.request, &slot) != ResponseCache::Lookup::kHit) {
      needs_cycle_ = true;
    }
  }
  if (rank_ == 0 && stall_enabled_) feed_stall_inspector(now);
  return Status::OK();
}

Status Controller::accept(std::vector<Request> new_requests) {
  for (Request& request : new_requests) {
    request.rank = rank_;
    if (request.op == OpType::kJoin || request.op == OpType::kShutdown) {
      if (request.op == OpType::kJoin) joined_ = true;
      control_requests_.push_back(std::move(request));
      continue;
    }
    // The tensor queue refuses a second collective under an in-flight name;
    // reaching this is a bug in the caller, and the runtime must stop.
    auto [slot, inserted] = pending_.try_emplace(request.name);
    if (!inserted) {
      return Status::InvalidArgument("A collective named '" + request.name +
                                     "' is already in flight on rank " + std::to_string(rank_));
    }
    pending_order_.push_back(request.name);
    slot->second = PendingRequest{std::move(request), false};
  }
  return Status::OK();
}

std::vector<uint64_t> Controller::build_bits(std::set<std::string>* to_send,
                                             Clock::time_point now) {
  const size_t w = words();
  std::vector<uint64_t> bits(3 * w + 1 + outgoing_words_.size(), 0);
  if (rank_ == 0) std::copy(outgoing_words_.begin(), outgoing_words_.end(), bits.begin() + 3 * w + 1);
  bool force_slow_path = false;

  if (rank_ == 0 && stall_enabled_) {
    if (auto warning = stall_.check(now)) CHORUS_LOG(kWarning, *warning);
    // Partially ready cached tensors hide which ranks are missing; evicting
    // them makes every rank re-send, so the table learns who is missing.
    for (const std::string& name : stall_.cached_to_invalidate(now)) {
      if (auto slot = cache_.slot_of(name)) set_bit(&bits, w, kInvalid, *slot);
    }
    stall_shutdown_ = stall_.shutdown_reason(now);
    force_slow_path = stall_shutdown_.has_value();
  }

  for (const std::string& name : pending_order_) {
    const PendingRequest& p = pending_.at(name);
    if (p.sent_to_coordinator) continue;
    uint32_t slot = 0;
    switch (cache_.lookup(p.request, &slot)) {
      case ResponseCache::Lookup::kHit:
        set_bit(&bits, w, kReady, slot);
        break;
      case ResponseCache::Lookup::kChanged:
        set_bit(&bits, w, kInvalid, slot);
        to_send->insert(name);
        break;
      case ResponseCache::Lookup::kMiss:
        to_send->insert(name);
        break;
    }
  }
  // Every cached slot this rank has no hit for holds the others back.
  const std::vector<uint64_t>& occupied = cache_.occupied_words();
  for (size_t i = 0; i < w; ++i) bits[kNotReady * w + i] = occupied[i] & ~bits[kReady * w + i];
  if (joined_) {
    // A joined rank contributes zeros to allreduces, so it never holds one
    // back; it does not mark them ready either, so they fire only when some
    // rank that has not joined asks for them.
    std::vector<uint32_t> zeros_given;
    for_each_set_bit(bits, w, kNotReady, [&](uint32_t slot) {
      if (cache_.response(slot).type == Response::Type::kAllreduce) zeros_given.push_back(slot);
    });
    for (uint32_t slot : zeros_given) bits[kNotReady * w + slot / 64] &= ~(uint64_t{1} << (slot % 64));
  }
  if (!to_send->empty() || !control_requests_.empty() || force_slow_path) {
    bits[kFlags * w] |= kFlagSlowPath;
  }
  return bits;
}

bool Controller::evict_invalid(const std::vector<uint64_t>& bits, std::set<std::string>* to_send) {
  const size_t w = words();
  bool evicted = false;
  for_each_set_bit(bits, w, kInvalid, [&](uint32_t slot) {
    if (!cache_.occupied(slot)) return;
    const std::string name = cache_.response(slot).name;
    cache_.evict(slot);
    evicted = true;
    // The other ranks' requests for this name now go to the coordinator, so
    // ours must too, in this same slow path.
    auto it = pending_.find(name);
    if (it != pending_.end() && !it->second.sent_to_coordinator) to_send->insert(name);
  });
  return evicted;
}

void Controller::take_fast_path(const std::vector<uint64_t>& bits,
                                std::vector<Response>* responses) {
  const size_t w = words();
  partial_cached_.clear();
  for_each_set_bit(bits, w, kReady, [&](uint32_t slot) {
    if (!cache_.occupied(slot)) return;
    if (test_bit(bits, w, kNotReady, slot)) {
      partial_cached_.push_back(cache_.response(slot).name);
      return;
    }
    const Response& response = cache_.response(slot);
    responses->push_back(response);
    cache_.touch(slot);
    ++stats_.cache_hits;
    pending_.erase(response.name);  // absent on a joined rank
  });
}

Status Controller::run_slow_path(const std::set<std::string>& to_send,
                                 std::vector<Response>* responses) {
  ++stats_.slow_path_cycles;
  std::vector<Request> mine;
  for (const std::string& name : pending_order_) {
    if (!to_send.count(name)) continue;
    PendingRequest& p = pending_.at(name);
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
    finish(response);
    responses->push_back(std::move(response));
  }
  return Status::OK();
}

void Controller::finish(const Response& response) {
  if (cacheable(response.type)) {
    auto it = pending_.find(response.name);
    std::optional<Request> local;
    if (it != pending_.end()) local = it->second.request;
    cache_.put(response, local);
  }
  switch (response.type) {
    case Response::Type::kJoin:
      joined_ = false;  // every rank has joined; the next join starts afresh
      break;
    case Response::Type::kShutdown:
      break;  // the runtime fails everything still pending
    default:
      pending_.erase(response.name);
      break;
  }
}

}  // namespace chorus
