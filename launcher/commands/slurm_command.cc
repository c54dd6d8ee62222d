#include "commands/slurm_command.h"

namespace chorus::launcher {

Command build_srun_command(const JobPlan& plan, const WrapperInvocation& wrapper) {
  Command command;
  std::vector<std::string>& argv = command.argv;
  // pmix is the only plugin Debian's Open MPI can start under (pmi2 and none
  // fail with "OMPI was not built with SLURM's PMI support").
  // --kill-on-bad-exit: one failed rank ends the step at once instead of
  // leaving the others waiting in a collective.
  argv.insert(argv.end(), {"srun", "--mpi=pmix", "--ntasks=" + std::to_string(plan.np), "--kill-on-bad-exit=1"});
  if (plan.srun_nodes) argv.push_back("--nodes=" + std::to_string(*plan.srun_nodes));
  if (!plan.excluded_nodes.empty()) {
    std::string nodes;
    for (const std::string& node : plan.excluded_nodes) nodes += (nodes.empty() ? "" : ",") + node;
    argv.push_back("--exclude=" + nodes);
    // A step that had ranks on a node that died cannot complete until that
    // node answers again, and until then it holds its CPUs on the surviving
    // nodes too, although its processes there were killed: without sharing
    // them, the restart's step waits ("Requested nodes are busy").
    argv.push_back("--overlap");
  }
  // srun exports chorusrun's whole environment to the tasks (its default
  // --export=ALL), so the variables only need to be set for srun itself.
  for (const ForwardedVariable& variable : plan.variables) {
    if (variable.set) command.environment.emplace_back(variable.name, variable.value);
  }
  if (!plan.options.network_interface.empty()) {
    command.environment.emplace_back("OMPI_MCA_btl_tcp_if_include", plan.options.network_interface);
  }
  argv.insert(argv.end(), plan.options.mpi_args.begin(), plan.options.mpi_args.end());
  const std::vector<std::string> rank = wrapper_argv(plan, wrapper);
  argv.insert(argv.end(), rank.begin(), rank.end());
  return command;
}

}  // namespace chorus::launcher
