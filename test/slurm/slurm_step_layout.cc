#include "slurm_step_layout.h"

#include <cstdlib>
#include <sstream>

namespace chorus_test {

namespace {

// Parses 1 to max_digits decimal digits and nothing else. (Not <regex>: GCC
// 12 warns falsely inside libstdc++'s regex at -O1 with the sanitizers.)
bool parse_digits(const std::string& text, size_t max_digits, int* out) {
  if (text.empty() || text.size() > max_digits) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

bool read_int(const char* name, int* out, std::string* error) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    *error = std::string(name) + " is not set: run this program as a task of srun";
    return false;
  }
  if (!parse_digits(text, 9, out)) {
    *error = std::string(name) + "='" + text + "' is invalid: expected a non-negative integer";
    return false;
  }
  return true;
}

}  // namespace

bool SlurmStepLayout::parse_tasks_per_node(const std::string& text, std::vector<int>* out) {
  out->clear();
  if (text.empty() || text.back() == ',') return false;
  std::stringstream items(text);
  std::string piece;
  while (std::getline(items, piece, ',')) {
    // "<count>" or "<count>(x<repeat>)"
    int count = 0;
    int repeat = 1;
    const size_t open = piece.find("(x");
    if (open == std::string::npos) {
      if (!parse_digits(piece, 6, &count)) return false;
    } else if (piece.back() != ')' || !parse_digits(piece.substr(0, open), 6, &count) ||
               !parse_digits(piece.substr(open + 2, piece.size() - open - 3), 6, &repeat)) {
      return false;
    }
    if (repeat < 1) return false;
    out->insert(out->end(), static_cast<size_t>(repeat), count);
  }
  return !out->empty();
}

bool SlurmStepLayout::from_env(SlurmStepLayout* out, std::string* error) {
  SlurmStepLayout layout;
  if (!read_int("SLURM_PROCID", &layout.task_id, error) ||
      !read_int("SLURM_STEP_NUM_TASKS", &layout.tasks, error) ||
      !read_int("SLURM_LOCALID", &layout.local_id, error) ||
      !read_int("SLURM_NODEID", &layout.node_id, error) ||
      !read_int("SLURM_STEP_NUM_NODES", &layout.nodes, error)) {
    return false;
  }
  const char* per_node = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  if (per_node == nullptr || !parse_tasks_per_node(per_node, &layout.tasks_per_node) ||
      static_cast<int>(layout.tasks_per_node.size()) != layout.nodes) {
    *error = std::string("SLURM_STEP_TASKS_PER_NODE='") + (per_node ? per_node : "(unset)") +
             "' is invalid: expected counts such as 2(x2) for SLURM_STEP_NUM_NODES=" +
             std::to_string(layout.nodes) + " nodes";
    return false;
  }
  if (layout.node_id >= layout.nodes) {
    *error = "SLURM_NODEID=" + std::to_string(layout.node_id) + " is not below SLURM_STEP_NUM_NODES=" +
             std::to_string(layout.nodes);
    return false;
  }
  const char* name = std::getenv("SLURMD_NODENAME");
  layout.node_name = name != nullptr ? name : "";
  *out = layout;
  return true;
}

}  // namespace chorus_test
