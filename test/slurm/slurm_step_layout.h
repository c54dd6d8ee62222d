// Slurm's description of the job step this process belongs to, read from
// the variables slurmd sets for every task srun starts. The Slurm tests
// use it as the independent reference for Chorus's topology.
#pragma once

#include <string>
#include <vector>

namespace chorus_test {

struct SlurmStepLayout {
  int task_id = 0;   // SLURM_PROCID
  int tasks = 0;     // SLURM_STEP_NUM_TASKS
  int local_id = 0;  // SLURM_LOCALID
  int node_id = 0;   // SLURM_NODEID (index of this node within the step)
  int nodes = 0;     // SLURM_STEP_NUM_NODES
  std::string node_name;               // SLURMD_NODENAME
  std::vector<int> tasks_per_node;     // SLURM_STEP_TASKS_PER_NODE, expanded

  int tasks_on_node(int node) const { return tasks_per_node.at(static_cast<size_t>(node)); }

  // Reads the variables of this process; false with `error` naming the
  // variable that is missing or malformed (e.g. not started by srun).
  static bool from_env(SlurmStepLayout* out, std::string* error);
  // Expands Slurm's compressed counts: "2(x3),1" -> {2, 2, 2, 1}.
  static bool parse_tasks_per_node(const std::string& text, std::vector<int>* out);
};

}  // namespace chorus_test
