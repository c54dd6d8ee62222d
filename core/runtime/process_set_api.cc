// The public process-set API (chorus/process_set.h): add, remove and fail
// are control requests of the global set, so every rank applies them at the
// same point of the response order (docs/DESIGN.md "Process sets").
#include <algorithm>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/process_set_table.h"
#include "runtime/api.h"

namespace chorus {

using detail::base_request;
using detail::make_entry;
using detail::submit_one;

// Add and remove are collective and named by per-rank counters, so a rank
// must not refuse its own arguments before negotiating: the others would
// wait for its call and pair theirs with its next one, which may be another
// call. A refused request is sent anyway, carrying why (Request::error), and
// the coordinator fails the call on every rank, naming this one.
ProcessSet add_process_set(const std::vector<int>& ranks) {
  auto rt = detail::running_runtime();
  std::vector<int> sorted;
  const Status checked = normalize_process_set_ranks(ranks, rt->topology().size, &sorted);
  const std::string name = rt->next_add_set_name();
  Request request = base_request(name, OpType::kAddProcessSet, Tensor(nullptr, DataType::kUInt8, {0}),
                                 rt->topology().rank);
  if (checked.ok()) {
    request.set_ranks.assign(sorted.begin(), sorted.end());
  } else {
    request.edit_control().error = checked.message();
  }
  auto state = rt->new_handle(name, OpType::kAddProcessSet);
  Handle handle = submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), state));
  handle.wait();
  return ProcessSet{state->process_set_id()};
}

void remove_process_set(const ProcessSet& set) {
  auto rt = detail::running_runtime();
  Status checked;
  if (set.is_global()) {
    checked = Status::InvalidArgument("remove_process_set: the global set (id 0) cannot be removed");
  } else if (!rt->process_sets().contains(set.id)) {
    checked = Status::InvalidArgument("remove_process_set: process set " + std::to_string(set.id) +
                                      " does not exist (it was removed, or never added on this job)");
  }
  const std::string name = rt->next_remove_set_name();
  Request request = base_request(name, OpType::kRemoveProcessSet, Tensor(nullptr, DataType::kUInt8, {0}),
                                 rt->topology().rank);
  request.set_id = set.id;
  request.edit_control().error = checked.message();
  submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), rt->new_handle(name, OpType::kRemoveProcessSet)))
      .wait();
}

// Unlike add and remove, failing is one rank's call: its own argument
// errors concern no other rank and are thrown at once.
void fail_process_set(const ProcessSet& set, const std::string& reason) {
  auto rt = detail::running_runtime();
  const int me = rt->topology().rank;
  if (set.is_global()) {
    throw Error(Status::InvalidArgument(
        "fail_process_set: the global set (id 0) cannot fail alone; a rank that cannot go on shuts down "
        "(chorus::shutdown()), which fails the other ranks' pending collectives"));
  }
  std::vector<int> ranks;
  const Status exists = rt->process_sets().ranks(set.id, &ranks);
  if (!exists.ok()) throw Error(Status::InvalidArgument("fail_process_set: " + exists.message()));
  const std::string label = "process set " + std::to_string(set.id) + " " + ProcessSetTable::describe(ranks);
  if (!std::binary_search(ranks.begin(), ranks.end(), me)) {
    throw Error(Status::InvalidArgument("fail_process_set: rank " + std::to_string(me) + " is not in " + label +
                                        "; only the set's members may fail it"));
  }
  if (reason.empty()) {
    throw Error(Status::InvalidArgument("fail_process_set: no reason given for failing " + label +
                                        "; expected a text saying why (every member's error shows it)"));
  }
  if (rt->process_sets().failure(set.id)) return;
  const std::string name = rt->next_fail_set_name();
  Request request = base_request(name, OpType::kFailProcessSet, Tensor(nullptr, DataType::kUInt8, {0}), me);
  request.set_id = set.id;
  request.edit_control().error = reason;
  submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), rt->new_handle(name, OpType::kFailProcessSet)))
      .wait();
}

std::optional<ProcessSetFailure> process_set_failure(const ProcessSet& set) {
  auto rt = detail::running_runtime();
  std::vector<int> ranks;
  throw_if_error(rt->process_sets().ranks(set.id, &ranks));
  return rt->process_sets().failure(set.id);
}

std::vector<int> process_set_ranks(const ProcessSet& set) {
  std::vector<int> ranks;
  throw_if_error(detail::running_runtime()->process_sets().ranks(set.id, &ranks));
  return ranks;
}

int process_set_rank(const ProcessSet& set) {
  auto rt = detail::running_runtime();
  std::vector<int> ranks;
  throw_if_error(rt->process_sets().ranks(set.id, &ranks));
  auto it = std::find(ranks.begin(), ranks.end(), rt->topology().rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

int process_set_size(const ProcessSet& set) { return static_cast<int>(process_set_ranks(set).size()); }

std::vector<ProcessSet> process_sets() {
  std::vector<ProcessSet> out;
  for (int32_t id : detail::running_runtime()->process_sets().ids()) out.push_back(ProcessSet{id});
  return out;
}

}  // namespace chorus
