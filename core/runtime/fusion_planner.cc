#include "runtime/fusion_planner.h"

namespace chorus {
namespace {

bool fusable_type(Response::Type type) {
  return type == Response::Type::kAllreduce || type == Response::Type::kReducescatter;
}

// Responses that change what the job is doing: nothing that comes after one
// of them may be pulled ahead of it (work after a shutdown must fail, not
// run; a join changes who contributes data).
bool is_fence(Response::Type type) {
  return type == Response::Type::kShutdown || type == Response::Type::kJoin ||
         type == Response::Type::kAddProcessSet || type == Response::Type::kRemoveProcessSet ||
         type == Response::Type::kFailProcessSet;
}

int64_t response_bytes(const Response& r) {
  return r.elements * static_cast<int64_t>(dtype_size(r.dtype));
}

}  // namespace

bool fusable(const Response& a, const Response& b) {
  // Scale factors compare exactly: every rank got them from the same
  // serialized response, so equal means bit-identical.
  // A unit runs on one set's backends, among its members only.
  return fusable_type(a.type) && a.type == b.type && a.process_set == b.process_set && a.dtype == b.dtype &&
         a.device == b.device &&
         a.reduce_op == b.reduce_op && a.prescale == b.prescale && a.postscale == b.postscale;
}

// Greedy look-ahead: each unassigned response starts a unit, then every later
// unassigned compatible response that still fits joins it, so a small tensor
// behind an incompatible or oversized one is not left in a unit of its own.
// Units keep their members' relative order and are ordered by their first
// member; the result is a pure function of the input, identical on all ranks.
std::vector<ExecutionUnit> plan_fusion(std::vector<Response> responses, int64_t threshold_bytes) {
  std::vector<ExecutionUnit> units;
  std::vector<bool> taken(responses.size(), false);
  for (size_t i = 0; i < responses.size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    ExecutionUnit unit;
    // Room for every remaining response: growing a unit of hundreds of small
    // tensors step by step moved them all ~log2(n) times.
    if (fusable_type(responses[i].type)) unit.reserve(responses.size() - i);
    unit.push_back(std::move(responses[i]));
    // unit.front(), not a reference kept across push_back (which may move it).
    if (threshold_bytes > 0 && fusable_type(unit.front().type)) {
      int64_t total = response_bytes(unit.front());
      for (size_t j = i + 1; j < responses.size() && total <= threshold_bytes; ++j) {
        if (is_fence(responses[j].type)) break;
        if (taken[j] || !fusable(unit.front(), responses[j])) continue;
        const int64_t bytes = response_bytes(responses[j]);
        // Written as a subtraction so that huge sizes cannot overflow.
        if (bytes > threshold_bytes - total) continue;
        total += bytes;
        taken[j] = true;
        unit.push_back(std::move(responses[j]));
      }
    }
    units.push_back(std::move(unit));
  }
  return units;
}

}  // namespace chorus
