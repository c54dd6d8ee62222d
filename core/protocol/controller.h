// Controller: the negotiation protocol. Each cycle, every rank hands in the
// requests enqueued since the last cycle and gets back the same ordered list
// of responses as every other rank.
//
// Protocol of one cycle (all ranks call negotiate() together):
//  1. Each pending request that was not yet sent to the coordinator is looked
//     up in the response cache. A hit sets its slot's bit; a cached name with
//     other parameters sets the slot's "invalid" bit; a miss makes the request
//     "uncached".
//  2. One bitwise-OR allreduce of [NOT ready | ready | invalid | flags]. Since
//     AND(x) = NOT OR(NOT x), this yields the slots ready on every rank, the
//     slots ready on some rank (stall detection), the slots to evict, and
//     whether any rank needs the slow path. A joined rank reports every cached
//     allreduce as ready (it contributes zeros) but not in the "ready on some
//     rank" half, so nothing fires once every rank has joined; it flags the
//     other cached collectives of the global set invalid, so the others'
//     requests for them go to the coordinator, which fails them (below).
//  3. Invalid slots are evicted on every rank. Slots ready everywhere become
//     responses in slot order (identical on every rank).
//  4. Slow path, when any rank has uncached requests (or after evictions):
//     uncached requests are gathered to the coordinator, which records them
//     in its message table; a name that every non-joined rank has requested
//     (every rank, for adding or removing a process set) is checked for
//     agreement (op, dtype, shape, root, reduce op, scale factors, timeline
//     arguments, group) and becomes a response or an error response naming
//     the two disagreeing ranks and their values. A joined rank takes part
//     without a request in allreduces (zeros), barriers and timeline control;
//     any other collective of the global set that it did not request fails
//     with an error naming the joined ranks. An error for a member of a
//     group fails the group's other members still waiting (in the table or
//     ready on only some ranks) with it. Join, shutdown and stall
//     shutdown responses are added here. The list is broadcast; every rank
//     caches the successful responses in list order.
// The result is the fast-path responses followed by the slow-path ones.
//
// Process sets (process_set.h): every request and response carries its set,
// and everything above is keyed by (set, name) (tensor_key()). All ranks
// negotiate every set together, so every rank gets every response in one
// order and skips those of sets it is not in. A request is complete when
// every member of its set has sent it (the global set: every rank, joined
// ones excepted for allreduces). On the fast path a rank outside a cached
// response's set marks the slot as not holding anything back (as a joined
// rank does for allreduces), so the AND is over the set's members. Adding
// and removing a set are requests of the global set (kAddProcessSet,
// kRemoveProcessSet): the coordinator gives a new set the next id, and every
// controller records the set's members (or forgets the set, its cached
// responses, its pending requests and its table entries) when it receives
// the response.
//
// A request that carries its rank's own rejection of its arguments (`error`)
// is negotiated like any other and, once complete, answered with an error
// response naming that rank and the reason (find_rejection), so every rank's
// call fails together.
//
// Failing a set alone (kFailProcessSet, sent like join and shutdown): one
// member's request needs no other rank. The coordinator answers it in the
// cycle it arrives with a kFailProcessSet response and from then on refuses
// the set's requests (an error response each, kAborted, naming the failing
// rank and its reason); every controller, on the response, drops the set's
// pending requests, cache slots and table entries, as a removal does, but
// keeps its members, so that the set can still be removed.
//
// Coordinator words: a Controller built with `coordinator_words` > 0 appends
// that many words to the bit vector. Rank 0 writes the words set with
// set_coordinator_words(), every other rank zeros, so after the OR every
// rank holds rank 0's words, delivered in the same cycle everywhere (the
// autotuner's settings travel this way at the cost of a few bytes).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/config.h"
#include "protocol/controller_transport.h"
#include "protocol/message.h"
#include "protocol/response_cache.h"
#include "protocol/stall_inspector.h"

namespace chorus {

struct NegotiationStats {
  uint64_t cycles = 0;
  uint64_t slow_path_cycles = 0;  // cycles that gathered requests to the coordinator
  uint64_t cache_hits = 0;        // responses served by the bit-vector fast path
};

class Controller {
 public:
  using Clock = std::chrono::steady_clock;
  Controller(ControllerTransport* transport, const Config& config, size_t coordinator_words = 0);

  // Runs one cycle. `new_requests` are this rank's requests since the last
  // call (a kJoin request marks this rank as joined; kShutdown asks the job to
  // stop). On success `responses` holds the ordered responses for this cycle.
  // A non-ok Status means the transport failed: the runtime must stop.
  Status negotiate(std::vector<Request> new_requests, std::vector<Response>* responses,
                   Clock::time_point now = Clock::now());

  // True when this rank holds requests that must reach the coordinator in a
  // later cycle (e.g. their cache slot was evicted): the runtime must ask for
  // another cycle even if nothing new is enqueued.
  bool needs_cycle() const { return needs_cycle_; }
  // Coordinator only: when the stall inspector next needs a cycle.
  std::optional<Clock::time_point> next_deadline() const;
  bool joined() const { return joined_; }
  // The members of a set, as the responses received so far left them;
  // nullptr when no such set exists.
  const std::vector<int>* members(int32_t set) const;
  const NegotiationStats& stats() const { return stats_; }
  // Rank 0: the words the next negotiate() delivers to every rank (their
  // number is fixed at construction; other ranks' words are ignored).
  void set_coordinator_words(const std::vector<uint64_t>& words);
  // Every rank: rank 0's words as the last negotiate() delivered them.
  const std::vector<uint64_t>& coordinator_words() const { return received_words_; }
  const ResponseCache& cache() const { return cache_; }

 private:
  struct PendingRequest {
    Request request;
    bool sent_to_coordinator = false;
    bool send_now = false;  // goes to the coordinator in this cycle's slow path
    bool resolved = false;  // answered this cycle; dropped at its end
  };
  struct TableEntry {  // coordinator: one tensor's requests so far
    std::map<int, Request> by_rank;
  };

  // Adds this cycle's requests to pending_ (join and shutdown requests go to
  // control_requests_).
  void accept(std::vector<Request> new_requests);
  Status already_in_flight(const std::string& name) const;
  // Fills the bit vector and marks the requests that must go through the
  // coordinator this cycle (send_now). On the coordinator this first consults
  // the stall inspector (warning, invalidation of stalled cached slots, stall
  // shutdown). Fails when two pending requests share a cached name.
  Status build_bits(Clock::time_point now, std::vector<uint64_t>* bits);
  // Evicts the slots flagged invalid by any rank; this rank's unsent requests
  // for them go to the coordinator too. Returns true when anything was evicted.
  bool evict_invalid(const std::vector<uint64_t>& bits);
  void take_fast_path(const std::vector<uint64_t>& bits, std::vector<Response>* responses);
  Status run_slow_path(std::vector<Response>* responses);
  // Coordinator: the groups that failed validation this cycle, each with the
  // error every member of it fails with.
  using FailedGroups = std::map<std::string, std::string>;
  // Coordinator: folds gathered requests into the table and returns the
  // responses that became ready, in a deterministic order.
  std::vector<Response> coordinate(const std::vector<std::vector<Request>>& by_rank);
  // Coordinator: true when every rank that must take part has requested.
  bool complete(const TableEntry& entry) const;
  // Coordinator: true for a collective of the global set that a joined rank
  // did not submit and takes no part in: it can only fail.
  bool blocked_by_join(const TableEntry& entry) const;
  // Coordinator: moves every table entry that `ready` accepts (in first-seen
  // order) to `out` as its response.
  void emit_where(bool (Controller::*ready)(const TableEntry&) const, std::vector<Response>* out,
                  FailedGroups* failed_groups);
  // An error response records the groups of its requests in `failed_groups`.
  // Gives an added process set its id.
  Response make_response(const TableEntry& entry, FailedGroups* failed_groups);
  // Coordinator: a request for a set that does not exist (it was removed
  // while the request was on its way) or that failed fails at once.
  bool refuse_unusable_set(const Request& request, std::vector<Response>* out) const;
  // Coordinator: the answer to a kFailProcessSet request. The set counts as
  // failed from here on in this fold, and its table entries are dropped.
  Response fail_set(const Request& request);
  // Every rank, on a kRemoveProcessSet response: forgets the set.
  void forget_set(int32_t set);
  // Every rank, on a kFailProcessSet response: records the failure (the
  // first one stands) and drops the set's cache slots, this rank's pending
  // requests of it and the coordinator's table entries for it.
  void set_failed(const Response& failed);
  // Drops the set's cache slots, pending requests and table entries.
  void drop_set_work(int32_t set);
  // Coordinator: forgets the table entries of a set.
  void drop_table_entries(int32_t set);
  // Coordinator: a group runs as a unit, so once one member has failed, its
  // other members (which the ranks may even hold in different numbers) fail
  // with the same error instead of waiting for ranks that will never send
  // them: those still in the table and those ready on only some ranks.
  void fail_rest_of_groups(const FailedGroups& failed_groups, std::vector<Response>* out);
  // Caches a slow-path response and resolves `mine`, this rank's request for
  // it (nullptr when this rank has none).
  void finish(const Response& response, PendingRequest* mine);
  // Coordinator: reports this cycle's partially submitted tensors to the
  // stall inspector and forgets the ones that are no longer stalled.
  void feed_stall_inspector(Clock::time_point now);
  size_t words() const { return (cache_.capacity() + 63) / 64; }
  bool is_member(int32_t set) const;

  ControllerTransport* transport_;
  int rank_;
  int size_;
  ResponseCache cache_;
  // This rank's unresolved requests in submission order. The steady state
  // finds them by cache slot (pending_by_slot_), not by name: a name lookup
  // per tensor and cycle was most of the negotiation's cost.
  std::vector<PendingRequest> pending_;
  // This cycle: the index in pending_ of the request whose name each slot
  // holds (a hit or a changed request), valid where `claimed_` (the slots
  // this rank's own lookups found) has the bit.
  std::vector<uint32_t> pending_by_slot_;
  std::vector<uint64_t> claimed_;
  std::vector<Request> control_requests_;          // join/shutdown, not yet sent
  // The process sets other than the global one: id -> ranks, ascending.
  std::map<int32_t, std::vector<int>> set_members_;
  // The sets that failed (kFailProcessSet) and are not removed yet: id ->
  // what their work fails with (set_failure_text()).
  std::map<int32_t, std::string> failed_sets_;
  bool joined_ = false;
  bool needs_cycle_ = false;
  NegotiationStats stats_;
  std::vector<uint64_t> outgoing_words_;  // rank 0's, sized at construction
  std::vector<uint64_t> received_words_;

  // Coordinator state.
  std::map<std::string, TableEntry> table_;  // by tensor_key()
  std::vector<std::string> table_order_;    // keys in first-seen order
  int32_t next_set_id_ = 1;                 // the id of the next process set added
  std::set<int> joined_ranks_;
  int last_joined_rank_ = -1;
  StallInspector stall_;
  bool stall_enabled_ = false;
  std::optional<std::string> stall_shutdown_;      // emitted by this cycle's slow path
  std::vector<std::string> partial_cached_;        // this cycle: OR-ready, not AND-ready (keys)
  std::set<std::string> stall_tracked_;            // keys fed to stall_ last cycle
};

}  // namespace chorus
