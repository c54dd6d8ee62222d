// The coordinator's (rank 0's) half of the negotiation protocol: the table of
// partially submitted requests, join and shutdown bookkeeping, validation of
// complete requests and the stall inspector's input. See controller.h.
#include <algorithm>
#include <optional>

#include "protocol/controller.h"
#include "protocol/request_validation.h"

namespace chorus {
namespace {

// What a joined rank takes part in without a request of its own: allreduces
// (it contributes zeros), barriers and timeline control.
bool takes_joined_ranks(OpType op) {
  return op == OpType::kAllreduce || op == OpType::kBarrier || op == OpType::kStartTimeline ||
         op == OpType::kStopTimeline;
}

// Adding or removing a process set needs every rank (a joined one cannot
// submit it until its join() has returned).
bool changes_sets(const std::map<int, Request>& by_rank) {
  return std::any_of(by_rank.begin(), by_rank.end(), [](const auto& kv) {
    return kv.second.op == OpType::kAddProcessSet || kv.second.op == OpType::kRemoveProcessSet;
  });
}

// Why `request`'s collective cannot run: `joined` (ascending) have joined
// and did not submit it.
std::string joined_error(const Request& request, const std::vector<int>& joined) {
  std::string who;
  if (joined.size() == 1) {
    who = "rank " + std::to_string(joined[0]) + " has";
  } else {
    who = "ranks [";
    for (size_t i = 0; i < joined.size(); ++i) who += (i ? ", " : "") + std::to_string(joined[i]);
    who += "] have";
  }
  return std::string(op_type_name(request.op)) + " '" + request.name + "' cannot run while " + who +
         " joined: a joined rank takes part only in allreduces (contributing zeros), barriers and timeline "
         "control; run it on every rank before join(), or after join() has returned";
}

// Elements in one first-dimension row of `shape` (a scalar is one row of one).
int64_t row_elements(const Shape& shape) {
  int64_t row = 1;
  for (size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  return row;
}

}  // namespace

std::vector<Response> Controller::coordinate(const std::vector<std::vector<Request>>& by_rank) {
  std::vector<Response> out;
  FailedGroups failed_groups;
  int shutdown_rank = -1;
  // Folding in rank order, each rank's requests in its submission order,
  // makes the response order a function of the gathered data alone.
  for (int r = 0; r < static_cast<int>(by_rank.size()); ++r) {
    for (Request request : by_rank[r]) {
      request.rank = r;  // trust the transport's index over the payload
      if (request.op == OpType::kShutdown) {
        if (shutdown_rank < 0) shutdown_rank = r;
        continue;
      }
      if (request.op == OpType::kJoin) {
        joined_ranks_.insert(r);
        last_joined_rank_ = r;  // ranks fold in ascending order: ties go to the highest
        // Allreduces waiting only for ranks that have now joined can run.
        emit_where(&Controller::complete, &out, &failed_groups);
        if (static_cast<int>(joined_ranks_.size()) == size_) {
          Response join;
          join.type = Response::Type::kJoin;
          // The runtime finds each rank's join handle by this name; every
          // rank's join request carries the same one.
          join.name = request.name;
          join.last_joined_rank = last_joined_rank_;
          out.push_back(std::move(join));
          joined_ranks_.clear();
          last_joined_rank_ = -1;
        }
        continue;
      }
      if (request.op == OpType::kFailProcessSet) {
        out.push_back(fail_set(request));
        continue;
      }
      if (refuse_unusable_set(request, &out)) continue;
      const std::string key = tensor_key(request);
      auto [it, inserted] = table_.try_emplace(key);
      if (inserted) table_order_.push_back(key);
      it->second.by_rank[r] = std::move(request);
      if (complete(it->second)) {
        out.push_back(make_response(it->second, &failed_groups));
        table_order_.erase(std::find(table_order_.begin(), table_order_.end(), it->first));
        table_.erase(it);
      }
    }
  }
  // A collective that a joined rank blocks fails in the cycle it is first
  // asked for (one error for the ranks that asked so far; a later asker gets
  // its own), not once every rank that has not joined has asked: ranks that
  // skipped an unnamed op disagree on the names of later ones, so waiting
  // for all of them could wait forever.
  if (!joined_ranks_.empty()) emit_where(&Controller::blocked_by_join, &out, &failed_groups);
  // After the whole fold: a rank submits all members of a group at once, so
  // by now every member any rank holds is in the table or cached.
  fail_rest_of_groups(failed_groups, &out);
  if (shutdown_rank >= 0) {
    Response stop;
    stop.type = Response::Type::kShutdown;
    stop.shutdown_rank = shutdown_rank;
    stop.error_message = "Rank " + std::to_string(shutdown_rank) + " shut down";
    out.push_back(std::move(stop));
  } else if (stall_shutdown_) {
    Response stop;
    stop.type = Response::Type::kShutdown;
    stop.error_message = *stall_shutdown_;
    out.push_back(std::move(stop));
  }
  return out;
}

bool Controller::refuse_unusable_set(const Request& request, std::vector<Response>* out) const {
  if (request.process_set == 0) return false;
  const auto failed = failed_sets_.find(request.process_set);
  if (set_members_.count(request.process_set) && failed == failed_sets_.end()) return false;
  Response response;
  response.type = Response::Type::kError;
  response.error_code = StatusCode::kAborted;
  response.name = request.name;
  response.process_set = request.process_set;
  response.error_message =
      std::string(op_type_name(request.op)) + " " + tensor_label(request.process_set, request.name) +
      (failed != failed_sets_.end()
           ? ": " + failed->second
           : " from rank " + std::to_string(request.rank) + ": process set " +
                 std::to_string(request.process_set) + " was removed");
  out->push_back(std::move(response));
  return true;
}

Response Controller::fail_set(const Request& request) {
  Response response;
  response.name = request.name;
  const std::vector<int>* ranks = request.set_id == 0 ? nullptr : members(request.set_id);
  if (ranks == nullptr) {
    // The API checks the set first; this is a set removed meanwhile.
    response.type = Response::Type::kError;
    response.error_code = StatusCode::kInvalidArgument;
    response.error_message = "fail_process_set: process set " + std::to_string(request.set_id) +
                             " does not exist (it was removed, or never added on this job)";
    return response;
  }
  response.type = Response::Type::kFailProcessSet;
  response.set_id = request.set_id;
  response.edit_control().failing_rank = request.rank;
  response.error_message = request.error();
  // Requests of the set later in this fold are refused, and those it holds
  // will never complete. (Every rank drops the rest, the cache slots among
  // them, when it receives the response, in the list's order.)
  failed_sets_.emplace(request.set_id, set_failure_text(request.set_id, *ranks, request.rank, request.error()));
  drop_table_entries(request.set_id);
  return response;
}

bool Controller::complete(const TableEntry& entry) const {
  const int32_t set = entry.by_rank.begin()->second.process_set;
  if (set != 0) {
    // Every member of the set; join concerns the global set only.
    const std::vector<int>* ranks = members(set);
    if (ranks == nullptr) return false;
    return std::all_of(ranks->begin(), ranks->end(), [&](int r) { return entry.by_rank.count(r) > 0; });
  }
  // Otherwise a joined rank never holds a collective back: it takes part in
  // some without a request (takes_joined_ranks()), and the others fail,
  // naming it, instead of waiting for a rank that has no more data.
  const bool needs_every_rank = changes_sets(entry.by_rank);
  for (int r = 0; r < size_; ++r) {
    if (entry.by_rank.count(r)) continue;
    if (needs_every_rank || !joined_ranks_.count(r)) return false;
  }
  return true;
}

bool Controller::blocked_by_join(const TableEntry& entry) const {
  const Request& first = entry.by_rank.begin()->second;
  if (first.process_set != 0 || takes_joined_ranks(first.op) || changes_sets(entry.by_rank)) return false;
  return std::any_of(joined_ranks_.begin(), joined_ranks_.end(), [&](int r) { return !entry.by_rank.count(r); });
}

void Controller::emit_where(bool (Controller::*ready)(const TableEntry&) const, std::vector<Response>* out,
                            FailedGroups* failed_groups) {
  std::vector<std::string> still_waiting;
  for (const std::string& key : table_order_) {
    auto it = table_.find(key);
    if ((this->*ready)(it->second)) {
      out->push_back(make_response(it->second, failed_groups));
      table_.erase(it);
    } else {
      still_waiting.push_back(key);
    }
  }
  table_order_ = std::move(still_waiting);
}

Response Controller::make_response(const TableEntry& entry, FailedGroups* failed_groups) {
  Response response;
  response.name = entry.by_rank.begin()->second.name;
  response.process_set = entry.by_rank.begin()->second.process_set;
  std::optional<std::string> error = find_rejection(entry.by_rank);
  if (error) {
    response.error_code = StatusCode::kInvalidArgument;
  } else {
    error = find_mismatch(entry.by_rank);
  }
  if (!error && response.process_set == 0 && !takes_joined_ranks(entry.by_rank.begin()->second.op)) {
    std::vector<int> joined;
    for (int r : joined_ranks_) {
      if (!entry.by_rank.count(r)) joined.push_back(r);
    }
    if (!joined.empty()) {
      error = joined_error(entry.by_rank.begin()->second, joined);
      response.error_code = StatusCode::kPreconditionFailed;
    }
  }
  if (error) {
    response.type = Response::Type::kError;
    response.error_message = std::move(*error);
    for (const auto& [r, request] : entry.by_rank) {
      if (!request.group.empty()) {
        failed_groups->emplace(tensor_key(request.process_set, request.group), response.error_message);
      }
    }
    return response;
  }
  // All ranks agree; the lowest rank's request speaks for them.
  const Request& first = entry.by_rank.begin()->second;
  response.type = response_type_for(first.op);
  response.dtype = first.dtype;
  response.device = first.device;
  response.reduce_op = first.reduce_op;
  response.prescale = first.prescale;
  response.postscale = first.postscale;
  response.root = first.root;
  response.group = first.group;
  switch (first.op) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kReducescatter:
      response.elements = num_elements(first.shape);
      break;
    case OpType::kAllgather: {
      // Every member takes part in an allgather, so every index is filled:
      // the ranks of the job in order, or the set's members (by set rank). A
      // scalar gathers as one row.
      int64_t rows = 0;
      for (const auto& [r, request] : entry.by_rank) {
        response.first_dims.push_back(request.shape.empty() ? 1 : request.shape[0]);
        rows += response.first_dims.back();
      }
      response.elements = rows * row_elements(first.shape);
      break;
    }
    case OpType::kStartTimeline: {
      Response::Control& args = response.edit_control();
      args.timeline_path = first.timeline_path();
      args.mark_cycles = first.mark_cycles();
      break;
    }
    case OpType::kAddProcessSet:
      response.set_ranks = first.set_ranks;
      response.set_id = next_set_id_++;
      break;
    case OpType::kRemoveProcessSet:
      response.set_id = first.set_id;
      if (first.set_id == 0 || !set_members_.count(first.set_id)) {
        response.type = Response::Type::kError;
        response.error_code = StatusCode::kInvalidArgument;
        response.error_message = "remove_process_set: process set " + std::to_string(first.set_id) +
                                 (first.set_id == 0 ? " is the global set, which cannot be removed"
                                                    : " does not exist (already removed?)");
      }
      break;
    default:
      break;
  }
  return response;
}

void Controller::fail_rest_of_groups(const FailedGroups& failed_groups, std::vector<Response>* out) {
  if (failed_groups.empty()) return;
  const auto error_for = [&](const std::string& name, const std::string& group) {
    Response response;
    response.type = Response::Type::kError;
    response.name = name;
    response.error_message = failed_groups.at(group);
    return response;
  };
  // Groups are named within their process set, like tensors.
  const auto failed_group_of = [&](const TableEntry& entry) -> std::optional<std::string> {
    for (const auto& [r, request] : entry.by_rank) {
      std::string group = tensor_key(request.process_set, request.group);
      if (failed_groups.count(group)) return group;
    }
    return std::nullopt;
  };
  std::vector<std::string> still_waiting;
  for (const std::string& name : table_order_) {
    auto it = table_.find(name);
    if (const std::optional<std::string> group = failed_group_of(it->second)) {
      const Request& first = it->second.by_rank.begin()->second;
      Response error = error_for(first.name, *group);
      error.process_set = first.process_set;
      out->push_back(std::move(error));
      table_.erase(it);
    } else {
      still_waiting.push_back(name);
    }
  }
  table_order_ = std::move(still_waiting);
  // Members that some ranks found in the response cache are ready there and
  // would wait for the others forever: they fail too.
  for (const std::string& name : partial_cached_) {
    const auto slot = cache_.slot_of(name);
    if (!slot) continue;
    const std::string group = tensor_key(cache_.response(*slot).process_set, cache_.response(*slot).group);
    if (!failed_groups.count(group)) continue;
    const bool answered = std::any_of(out->begin(), out->end(), [&](const Response& r) { return tensor_key(r) == name; });
    if (!answered) {
      Response error = error_for(cache_.response(*slot).name, group);
      error.process_set = cache_.response(*slot).process_set;
      out->push_back(std::move(error));
    }
  }
}

void Controller::feed_stall_inspector(Clock::time_point now) {
  std::set<std::string> tracked;
  for (const std::string& name : table_order_) {
    const TableEntry& entry = table_.at(name);
    std::set<int> ready;
    for (const auto& kv : entry.by_rank) ready.insert(kv.first);
    const Request& first = entry.by_rank.begin()->second;
    const std::vector<int>* set_ranks = first.process_set == 0 ? nullptr : members(first.process_set);
    stall_.record_pending(name, ready, now, op_type_name(first.op), tensor_label(first.process_set, first.name),
                          set_ranks ? *set_ranks : std::vector<int>{});
    tracked.insert(name);
  }
  for (const std::string& name : partial_cached_) {
    // The slot may have been reused by this cycle's slow path; then the
    // request comes back as a miss and shows up in the table instead.
    auto slot = cache_.slot_of(name);
    if (!slot || tracked.count(name)) continue;
    const Response& cached = cache_.response(*slot);
    stall_.record_partial_cached(name, now, response_type_name(cached.type),
                                 tensor_label(cached.process_set, cached.name));
    tracked.insert(name);
  }
  for (const std::string& name : stall_tracked_) {
    if (!tracked.count(name)) stall_.forget(name);
  }
  stall_tracked_ = std::move(tracked);
}

}  // namespace chorus
