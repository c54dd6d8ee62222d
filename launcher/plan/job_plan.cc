#include "plan/job_plan.h"

#include <cstring>
#include <set>

#include "base/launcher_rendezvous.h"
#include "options/runtime_settings.h"
#include "options/usage_error.h"

namespace chorus::launcher {
namespace {

bool is_variable_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool is_launcher_variable(const std::string& name) {
  return name == kLauncherAddressVariable || name == kLauncherTokenVariable || name == kLauncherRankVariable;
}

// Later entries replace earlier ones of the same name, keeping the first
// position, so the command lists each variable once.
void put(std::vector<ForwardedVariable>* variables, ForwardedVariable variable) {
  for (ForwardedVariable& existing : *variables) {
    if (existing.name == variable.name) {
      existing = std::move(variable);
      return;
    }
  }
  variables->push_back(std::move(variable));
}

std::vector<ForwardedVariable> forwarded_variables(const LaunchOptions& options, const Environment& env) {
  std::vector<ForwardedVariable> variables;
  // Remote ranks do not inherit chorusrun's environment: pass on what a
  // program needs to be found and loaded, and the runtime's settings.
  for (const char* name : {"PATH", "LD_LIBRARY_PATH"}) {
    if (const char* value = env.get(name)) put(&variables, {name, value, false});
  }
  for (const auto& [name, value] : env.variables()) {
    if (name.rfind("CHORUS_", 0) != 0 || is_launcher_variable(name)) continue;
    check_runtime_variable(name, value, name + "='" + value + "' in chorusrun's environment");
    put(&variables, {name, value, false});
  }
  for (const auto& [name, value] : options.runtime_variables) put(&variables, {name, value, true});
  for (const std::string& entry : options.exports) {
    const size_t equals = entry.find('=');
    const std::string name = entry.substr(0, equals);
    if (!is_variable_name(name)) {
      throw UsageError("-x '" + entry + "' is invalid: expected NAME or NAME=VALUE with NAME made of letters, digits and '_'");
    }
    if (is_launcher_variable(name)) {
      throw UsageError("-x '" + entry + "': " + name + " is set by chorusrun for each rank and cannot be forwarded");
    }
    if (equals == std::string::npos) {
      const char* value = env.get(name.c_str());
      if (value == nullptr) {
        throw UsageError("-x " + name + ": " + name + " is not set in chorusrun's environment; give a value with -x " +
                         name + "=VALUE");
      }
      check_runtime_variable(name, value, "-x " + name + " (" + name + "='" + value + "')");
      put(&variables, {name, value, false});
    } else {
      const std::string value = entry.substr(equals + 1);
      check_runtime_variable(name, value, "-x " + name + "='" + value + "'");
      put(&variables, {name, value, true});
    }
  }
  return variables;
}

}  // namespace

JobPlan plan_job(const LaunchOptions& options, const Environment& env, const SystemFacts& system) {
  JobPlan plan;
  plan.options = options;
  const bool explicit_hosts = !options.host_list.empty() || !options.hostfile.empty();
  std::optional<SlurmAllocation> slurm;
  if (!explicit_hosts) slurm = discover_slurm_allocation([&](const char* name) { return env.get(name); });

  plan.launcher = options.launcher.empty() ? (slurm ? "srun" : "mpirun") : options.launcher;
  if (plan.launcher == "srun" && explicit_hosts) {
    throw UsageError("-H and --hostfile cannot be used with --launcher srun: srun places ranks in the Slurm "
                     "allocation; use --launcher mpirun to choose hosts");
  }

  if (!options.host_list.empty()) {
    plan.hosts = parse_host_list(options.host_list);
    plan.host_source = "-H";
  } else if (!options.hostfile.empty()) {
    plan.hosts = read_hostfile(options.hostfile);
    plan.host_source = "hostfile " + options.hostfile;
  } else if (slurm) {
    plan.hosts = slurm->hosts;
    plan.host_source = "Slurm job " + slurm->job_id;
  }

  if (options.np) {
    plan.np = *options.np;
  } else if (slurm && slurm->ntasks) {
    plan.np = *slurm->ntasks;
  } else if (!plan.hosts.empty()) {
    plan.np = total_slots(plan.hosts);
  } else {
    throw UsageError("-np is required when no hosts are given (-H, --hostfile or a Slurm allocation)");
  }

  if (plan.hosts.empty() && plan.launcher == "mpirun") {
    // Slots on this machine: one per rank, so mpirun never refuses; ranks
    // beyond the cores share them and are told to yield when idle.
    plan.hosts = {Host{"localhost", plan.np, "localhost"}};
    plan.host_source = "localhost";
    if (plan.np > system.cores) {
      plan.oversubscribed = true;
      plan.notices.push_back("chorusrun: " + std::to_string(plan.np) + " ranks on " + std::to_string(system.cores) +
                             " cores: oversubscribing (idle ranks yield the CPU)");
    }
  }
  if (!plan.hosts.empty()) check_enough_slots(plan.hosts, plan.np);

  plan.all_hosts_local = !plan.hosts.empty();
  for (const Host& host : plan.hosts) {
    plan.all_hosts_local = plan.all_hosts_local && system.is_local_host && system.is_local_host(host.name);
  }
  // Bound to a core of its own, a rank's threads keep their caches and are
  // not moved around by the scheduler, which made the reference MLP train
  // faster here (docs/MEASUREMENTS.md, "Process binding"). Each rank gets an
  // equal share of the CPUs, so
  // intra-op threads still find cores of their own. Remote hosts' CPUs are
  // unknown here, and a restricted chorusrun would be overridden by mpirun.
  if (options.bind_to == "auto" && plan.launcher == "mpirun" && plan.all_hosts_local && plan.hosts.size() == 1 &&
      plan.np <= system.cores && !system.cpus_restricted) {
    plan.cpus_per_rank = system.cores / plan.np;
  }
  plan.tag_output = options.tag_output.value_or(plan.np > 1);

  // A missing program is only certain on this machine; remote hosts may
  // have it where this one does not.
  const std::string& program = options.program.front();
  if (plan.all_hosts_local && program.find('/') != std::string::npos && system.is_regular_file &&
      !system.is_regular_file(program)) {
    throw UsageError("PROGRAM '" + program + "' does not exist or is not an executable file");
  }

  plan.variables = forwarded_variables(options, env);
  return plan;
}

std::vector<std::string> wrapper_argv(const JobPlan& plan, const WrapperInvocation& wrapper) {
  std::vector<std::string> argv = {wrapper.chorusrun_path, "--chorus-rank-wrapper", wrapper.report_endpoint,
                                   wrapper.token, plan.tag_output ? "--tag" : "--no-tag", "--"};
  argv.insert(argv.end(), plan.options.program.begin(), plan.options.program.end());
  return argv;
}

}  // namespace chorus::launcher
