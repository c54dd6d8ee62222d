#include "commands/openmpi_command.h"

namespace chorus::launcher {
namespace {

void add_mca(std::vector<std::string>* argv, const std::string& name, const std::string& value) {
  argv->insert(argv->end(), {"--mca", name, value});
}

}  // namespace

Command build_openmpi_command(const JobPlan& plan, const MpiImplementation& /*mpi*/, const WrapperInvocation& wrapper,
                              bool is_root, const KeepaliveSettings& keepalive) {
  Command command;
  std::vector<std::string>& argv = command.argv;
  argv.push_back("mpirun");
  // Open MPI refuses root without being told; containers commonly run as root.
  if (is_root) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), {"-np", std::to_string(plan.np), "-H", format_host_list(plan.hosts)});
  if (plan.cpus_per_rank > 0) {
    // Logical CPUs, as chorusrun counted them: PE counts hardware threads.
    argv.insert(argv.end(), {"--use-hwthread-cpus", "--bind-to", "hwthread", "--map-by",
                             "slot:PE=" + std::to_string(plan.cpus_per_rank)});
  } else {
    const std::string& bind = plan.options.bind_to == "auto" ? "none" : plan.options.bind_to;
    argv.insert(argv.end(), {"--bind-to", bind, "--map-by", "slot"});
  }
  add_mca(&argv, "oob_tcp_keepalive_time", std::to_string(keepalive.time_s));
  add_mca(&argv, "oob_tcp_keepalive_intvl", std::to_string(keepalive.interval_s));
  add_mca(&argv, "oob_tcp_keepalive_probes", std::to_string(keepalive.probes));
  // mpirun only knows to yield when it sees fewer slots than ranks; we gave
  // it one slot per rank, so say it.
  if (plan.oversubscribed) add_mca(&argv, "mpi_yield_when_idle", "1");
  if (!plan.options.network_interface.empty()) {
    add_mca(&argv, "btl_tcp_if_include", plan.options.network_interface);
    add_mca(&argv, "oob_tcp_if_include", plan.options.network_interface);
  }
  for (const ForwardedVariable& variable : plan.variables) {
    if (variable.set) command.environment.emplace_back(variable.name, variable.value);
    argv.insert(argv.end(), {"-x", variable.name});
  }
  argv.insert(argv.end(), plan.options.mpi_args.begin(), plan.options.mpi_args.end());
  const std::vector<std::string> rank = wrapper_argv(plan, wrapper);
  argv.insert(argv.end(), rank.begin(), rank.end());
  return command;
}

}  // namespace chorus::launcher
