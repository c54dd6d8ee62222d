#include "protocol/request_validation.h"

#include <sstream>
#include <vector>

namespace chorus {
namespace {

bool is_reduction(OpType op) { return op == OpType::kAllreduce || op == OpType::kReducescatter; }

// Allgather and alltoall concatenate or split along the first dimension, so
// only the trailing dimensions (and the rank of the shape) must agree.
bool shapes_differ(const Request& a, const Request& b) {
  if (a.op != OpType::kAllgather && a.op != OpType::kAlltoall) return a.shape != b.shape;
  if (a.shape.size() != b.shape.size()) return true;
  for (size_t i = 1; i < a.shape.size(); ++i) {
    if (a.shape[i] != b.shape[i]) return true;
  }
  return false;
}

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string group_value(const Request& r) {
  if (r.group.empty()) return "no group";
  return "group '" + r.group + "' of " + std::to_string(r.group_size);
}

// One field that must agree. `applies` is false for fields an op ignores
// (the root of an allreduce), so frameworks need not fill them consistently.
struct Field {
  const char* what;
  bool (*applies)(OpType op);
  bool (*differs)(const Request& a, const Request& b);
  std::string (*value)(const Request& r);
};

bool always(OpType) { return true; }

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out + "]";
}

const Field kFields[] = {
    {"operation", always, [](const Request& a, const Request& b) { return a.op != b.op; },
     [](const Request& r) { return std::string(op_type_name(r.op)); }},
    {"dtype", always, [](const Request& a, const Request& b) { return a.dtype != b.dtype; },
     [](const Request& r) { return std::string(dtype_name(r.dtype)); }},
    {"shape", always, shapes_differ, [](const Request& r) { return shape_to_string(r.shape); }},
    // Ranks normally use different GPUs, so only the kind must agree.
    {"device", always,
     [](const Request& a, const Request& b) { return a.device.kind != b.device.kind; },
     [](const Request& r) {
       const std::string device = r.device.to_string();
       return device.substr(0, device.find(':'));
     }},
    {"root rank", [](OpType op) { return op == OpType::kBroadcast; },
     [](const Request& a, const Request& b) { return a.root != b.root; },
     [](const Request& r) { return std::to_string(r.root); }},
    {"reduce op", is_reduction,
     [](const Request& a, const Request& b) { return a.reduce_op != b.reduce_op; },
     [](const Request& r) { return std::string(reduce_op_name(r.reduce_op)); }},
    {"prescale factor", always,
     [](const Request& a, const Request& b) { return a.prescale != b.prescale; },
     [](const Request& r) { return number(r.prescale); }},
    {"postscale factor", always,
     [](const Request& a, const Request& b) { return a.postscale != b.postscale; },
     [](const Request& r) { return number(r.postscale); }},
    {"process set ranks", [](OpType op) { return op == OpType::kAddProcessSet; },
     [](const Request& a, const Request& b) { return a.set_ranks != b.set_ranks; },
     [](const Request& r) { return rank_list(r.set_ranks); }},
    {"process set", [](OpType op) { return op == OpType::kRemoveProcessSet; },
     [](const Request& a, const Request& b) { return a.set_id != b.set_id; },
     [](const Request& r) { return std::to_string(r.set_id); }},
    {"timeline path", [](OpType op) { return op == OpType::kStartTimeline; },
     [](const Request& a, const Request& b) { return a.timeline_path() != b.timeline_path(); },
     [](const Request& r) { return "'" + r.timeline_path() + "'"; }},
    {"mark cycles", [](OpType op) { return op == OpType::kStartTimeline; },
     [](const Request& a, const Request& b) { return a.mark_cycles() != b.mark_cycles(); },
     [](const Request& r) { return std::string(r.mark_cycles() ? "true" : "false"); }},
    {"group", always,
     [](const Request& a, const Request& b) {
       return a.group != b.group || a.group_size != b.group_size;
     },
     group_value},
};

}  // namespace

std::optional<std::string> find_mismatch(const std::map<int, Request>& by_rank) {
  if (by_rank.empty()) return std::nullopt;
  const auto& [first_rank, first] = *by_rank.begin();
  for (const Field& field : kFields) {
    if (!field.applies(first.op)) continue;
    for (const auto& [rank, request] : by_rank) {
      if (!field.differs(first, request)) continue;
      return std::string("Mismatched ") + field.what + " for " + op_type_name(first.op) + " '" +
             first.name + "': rank " + std::to_string(first_rank) + " has " + field.value(first) +
             ", rank " + std::to_string(rank) + " has " + field.value(request);
    }
  }
  return std::nullopt;
}

std::optional<std::string> find_rejection(const std::map<int, Request>& by_rank) {
  const Request* first = nullptr;
  int first_rank = -1;
  std::vector<int64_t> others;
  for (const auto& [rank, request] : by_rank) {
    if (request.error().empty()) continue;
    if (first == nullptr) {
      first = &request;
      first_rank = rank;
    } else {
      others.push_back(rank);
    }
  }
  if (first == nullptr) return std::nullopt;
  std::string message = std::string(op_type_name(first->op)) + " '" + first->name + "' was rejected on rank " +
                        std::to_string(first_rank) + ": " + first->error();
  if (!others.empty()) message += " (rank(s) " + rank_list(others) + " rejected their arguments too)";
  return message;
}

}  // namespace chorus
