// Slurm discovery: inside an allocation (SLURM_JOB_ID set) the hosts and
// their slots come from SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE, and -np
// defaults to SLURM_NTASKS.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "options/host_list.h"

namespace chorus::launcher {

using EnvLookup = std::function<const char*(const char* name)>;

// Expands Slurm's host list syntax: "node[01-04,07],gpu-a[1-2]" gives
// node01 node02 node03 node04 node07 gpu-a1 gpu-a2. Zero padding follows the
// lower bound ("[08-10]": 08 09 10); several brackets in one name expand to
// every combination ("r[1-2]n[1-2]": r1n1 r1n2 r2n1 r2n2).
std::vector<std::string> expand_slurm_nodelist(const std::string& text);

// Expands SLURM_TASKS_PER_NODE: "2(x3),1" gives 2 2 2 1.
std::vector<int> parse_slurm_tasks_per_node(const std::string& text);

struct SlurmAllocation {
  std::string job_id;
  std::vector<Host> hosts;  // one per node, slots = tasks on that node
  std::optional<int> ntasks;  // SLURM_NTASKS, when set
};

// The allocation this process runs in, or nothing outside Slurm (no
// SLURM_JOB_ID). Throws when a variable is missing or malformed.
std::optional<SlurmAllocation> discover_slurm_allocation(const EnvLookup& env);

}  // namespace chorus::launcher
