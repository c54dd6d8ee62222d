// The public process-set API (chorus/process_set.h): add and remove are
// control requests of the global set, so every rank applies them at the same
// point of the response order (docs/DESIGN.md "Process sets").
#include <algorithm>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "runtime/api_requests.h"
#include "runtime/process_set_table.h"
#include "runtime/running_runtime.h"

namespace chorus {

using detail::base_request;
using detail::make_entry;
using detail::submit_one;

ProcessSet add_process_set(const std::vector<int>& ranks) {
  auto rt = detail::running_runtime();
  std::vector<int> sorted;
  throw_if_error(normalize_process_set_ranks(ranks, rt->topology().size, &sorted));
  const std::string name = rt->next_add_set_name();
  Request request = base_request(name, OpType::kAddProcessSet, Tensor(nullptr, DataType::kUInt8, {0}),
                                 rt->topology().rank);
  request.set_ranks.assign(sorted.begin(), sorted.end());
  auto state = rt->new_handle(name, OpType::kAddProcessSet);
  Handle handle = submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), state));
  handle.wait();
  return ProcessSet{state->process_set_id()};
}

void remove_process_set(const ProcessSet& set) {
  auto rt = detail::running_runtime();
  if (set.is_global()) {
    throw Error(Status::InvalidArgument("remove_process_set: the global set (id 0) cannot be removed"));
  }
  if (!rt->process_sets().contains(set.id)) {
    throw Error(Status::InvalidArgument("remove_process_set: process set " + std::to_string(set.id) +
                                        " does not exist (it was removed, or never added on this job)"));
  }
  const std::string name = rt->next_remove_set_name();
  Request request = base_request(name, OpType::kRemoveProcessSet, Tensor(nullptr, DataType::kUInt8, {0}),
                                 rt->topology().rank);
  request.set_id = set.id;
  submit_one(*rt, make_entry(std::move(request), Tensor(), Tensor(), rt->new_handle(name, OpType::kRemoveProcessSet)))
      .wait();
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
