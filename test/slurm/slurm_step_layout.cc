#include "slurm_step_layout.h"

#include <cstdlib>
#include <regex>
#include <sstream>

namespace chorus_test {

namespace {

bool read_int(const char* name, int* out, std::string* error) {
  const char* text = std::getenv(name);
  if (text == nullptr) {
    *error = std::string(name) + " is not set: run this program as a task of srun";
    return false;
  }
  if (!std::regex_match(text, std::regex("[0-9]{1,9}"))) {
    *error = std::string(name) + "='" + text + "' is invalid: expected a non-negative integer";
    return false;
  }
  *out = std::atoi(text);
  return true;
}

}  // namespace

bool SlurmStepLayout::parse_tasks_per_node(const std::string& text, std::vector<int>* out) {
  static const std::regex item("([0-9]{1,6})(?:\\(x([0-9]{1,6})\\))?");
  out->clear();
  if (text.empty() || text.back() == ',') return false;
  std::stringstream items(text);
  std::string piece;
  std::smatch match;
  while (std::getline(items, piece, ',')) {
    if (!std::regex_match(piece, match, item)) return false;
    const int count = std::atoi(match[1].str().c_str());
    const int repeat = match[2].matched ? std::atoi(match[2].str().c_str()) : 1;
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
