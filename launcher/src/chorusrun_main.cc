// chorusrun: starts a Chorus job. See docs/LAUNCHER.md.
#include <unistd.h>

#include <iostream>
#include <random>
#include <sstream>

#include "check_build.h"
#include "job_plan.h"
#include "job_runner.h"
#include "launch_options.h"
#include "local_host.h"
#include "mpi_implementation.h"
#include "openmpi_command.h"
#include "process_util.h"
#include "rank_wrapper.h"
#include "slurm_command.h"
#include "usage_error.h"

namespace launcher = chorus::launcher;

namespace {

// Tells this job's reports from anything else that connects to the port.
std::string random_token() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << device() << device() << device() << device();
  return out.str();
}

int launch(const launcher::LaunchOptions& options) {
  launcher::SystemFacts facts;
  facts.cores = launcher::online_cores();
  facts.cpus_restricted = launcher::cpus_restricted();
  facts.is_root = geteuid() == 0;
  facts.is_local_host = launcher::is_local_host;
  facts.is_regular_file = launcher::is_executable_file;
  const launcher::JobPlan plan = launcher::plan_job(options, launcher::Environment::current(), facts);

  launcher::MpiImplementation mpi;
  if (plan.launcher == "mpirun") mpi = launcher::detect_mpi();
  launcher::ReportListener listener;
  launcher::WrapperInvocation wrapper;
  wrapper.chorusrun_path = launcher::this_executable();
  wrapper.report_endpoint = launcher::choose_report_address(plan) + ":" + std::to_string(listener.port());
  wrapper.token = random_token();
  const launcher::Command command = plan.launcher == "mpirun"
                                        ? launcher::build_openmpi_command(plan, mpi, wrapper, facts.is_root)
                                        : launcher::build_srun_command(plan, wrapper);
  if (options.dry_run) {
    std::cout << command.to_shell() << std::endl;
    return 0;
  }
  for (const std::string& notice : plan.notices) std::cerr << notice << std::endl;
  if (options.verbose) std::cerr << "chorusrun: running " << command.to_shell() << std::endl;

  launcher::RunSettings settings;
  settings.np = plan.np;
  settings.launcher_name = plan.launcher;
  settings.token = wrapper.token;
  settings.start_timeout_seconds = options.start_timeout_seconds;
  const int signal_fd = launcher::open_supervisor_signalfd();
  const launcher::JobOutcome outcome = launcher::run_job(command, settings, &listener, signal_fd);
  if (!outcome.final_line.empty()) std::cerr << outcome.final_line << std::endl;
  return outcome.exit_status;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == launcher::kRankWrapperFlag) {
    return launcher::rank_wrapper_main(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  try {
    const launcher::LaunchOptions options = launcher::parse_launch_options(args);
    if (options.help) {
      std::cout << launcher::launch_usage();
      return 0;
    }
    if (options.check_build) {
      std::cout << launcher::format_check_build(launcher::detect_build_features());
      return 0;
    }
    return launch(options);
  } catch (const launcher::UsageError& e) {
    std::cerr << "chorusrun: error: " << e.what() << std::endl;
    return 2;
  }
}
