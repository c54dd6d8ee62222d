#include "running/job_attempt.h"

#include <iostream>
#include <random>
#include <sstream>

#include "commands/openmpi_command.h"
#include "commands/slurm_command.h"
#include "plan/local_host.h"
#include "plan/mpi_implementation.h"
#include "process/process_util.h"

namespace chorus::launcher {

std::string random_token() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << device() << device() << device() << device();
  return out.str();
}

AttemptResult run_attempt(const JobPlan& plan, const AttemptSettings& settings) {
  MpiImplementation mpi;
  if (plan.launcher == "mpirun") mpi = detect_mpi();
  ReportListener listener;
  WrapperInvocation wrapper;
  wrapper.chorusrun_path = this_executable();
  wrapper.report_endpoint = choose_report_address(plan) + ":" + std::to_string(listener.port());
  wrapper.token = random_token();
  const Command command = plan.launcher == "mpirun" ? build_openmpi_command(plan, mpi, wrapper, settings.is_root)
                                                    : build_srun_command(plan, wrapper);
  AttemptResult result;
  if (settings.dry_run) {
    std::cout << command.to_shell() << std::endl;
    return result;
  }
  for (const std::string& notice : plan.notices) std::cerr << notice << std::endl;
  if (settings.verbose) std::cerr << "chorusrun: running " << command.to_shell() << std::endl;

  RunSettings run;
  run.np = plan.np;
  run.launcher_name = plan.launcher;
  run.token = wrapper.token;
  run.start_timeout_seconds = plan.options.start_timeout_seconds;
  run.hosts_changed = settings.hosts_changed;
  run.poll_seconds = settings.poll_seconds;
  result.outcome = run_job(command, run, &listener, settings.signal_fd, &result.record);
  return result;
}

}  // namespace chorus::launcher
