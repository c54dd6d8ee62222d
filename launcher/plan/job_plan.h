// What to launch, decided from the options, the environment and the machine:
// the hosts (-H, hostfile, Slurm allocation or localhost), the number of
// ranks, the launcher, and the variables every rank gets. Pure: everything
// it looks at comes in through its arguments, so tests can pin it down.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "options/host_list.h"
#include "options/launch_options.h"
#include "plan/slurm_environment.h"
#include "process/environment.h"

namespace chorus::launcher {

struct SystemFacts {
  int cores = 1;
  bool cpus_restricted = false;  // chorusrun may not use every core (taskset, cpuset)
  bool is_root = false;
  std::function<bool(const std::string& host)> is_local_host;
  std::function<bool(const std::string& path)> is_regular_file;
};

// A variable every rank gets. `set` ones are put into the launcher's
// environment by chorusrun; the others are forwarded from chorusrun's own.
struct ForwardedVariable {
  std::string name;
  std::string value;
  bool set = false;
};

struct JobPlan {
  int np = 0;
  std::vector<Host> hosts;  // empty only for srun outside an allocation
  std::string host_source;  // "-H", "hostfile F", "Slurm job 42", "localhost"
  bool all_hosts_local = true;
  bool oversubscribed = false;  // localhost with more ranks than cores
  // --bind-to auto on this machine alone with no more ranks than cores: the
  // CPUs each rank is bound to (its own share); 0 leaves ranks unbound.
  int cpus_per_rank = 0;
  std::string launcher;         // "mpirun" or "srun"
  std::vector<ForwardedVariable> variables;
  bool tag_output = false;
  std::vector<std::string> notices;  // said once on stderr before the run
  // srun only: allocation nodes to leave out (--elastic, after they failed).
  std::vector<std::string> excluded_nodes;
  // srun only: how many nodes the step spans (--elastic). Inside an
  // allocation srun otherwise takes the allocation's node count
  // (SLURM_NNODES) and refuses a step that excludes one of them.
  std::optional<int> srun_nodes;
  LaunchOptions options;
};

JobPlan plan_job(const LaunchOptions& options, const Environment& env, const SystemFacts& system);

// Where a rank's wrapper reports to, and how it is started.
struct WrapperInvocation {
  std::string chorusrun_path;   // the chorusrun binary, same path on every host
  std::string report_endpoint;  // host:port of this chorusrun's listener
  std::string token;
};

// chorusrun --chorus-rank-wrapper ENDPOINT TOKEN --tag|--no-tag -- PROGRAM ARGS...
std::vector<std::string> wrapper_argv(const JobPlan& plan, const WrapperInvocation& wrapper);

}  // namespace chorus::launcher
