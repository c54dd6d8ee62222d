// chorusrun: starts a Chorus job. See docs/LAUNCHER.md.
#include <unistd.h>

#include <iostream>

#include "about/check_build.h"
#include "elastic/elastic_driver.h"
#include "options/launch_options.h"
#include "options/usage_error.h"
#include "plan/job_plan.h"
#include "plan/local_host.h"
#include "process/process_util.h"
#include "running/job_attempt.h"
#include "running/rank_wrapper.h"

namespace launcher = chorus::launcher;

namespace {

int launch(const launcher::LaunchOptions& options) {
  launcher::SystemFacts facts;
  facts.cores = launcher::online_cores();
  facts.cpus_restricted = launcher::cpus_restricted();
  facts.is_root = geteuid() == 0;
  facts.is_local_host = launcher::is_local_host;
  facts.is_regular_file = launcher::is_executable_file;
  launcher::AttemptSettings settings;
  settings.is_root = facts.is_root;
  settings.dry_run = options.dry_run;
  settings.verbose = options.verbose;
  if (options.elastic.enabled) {
    if (!options.dry_run) settings.signal_fd = launcher::open_supervisor_signalfd();
    return launcher::run_elastic(options, launcher::Environment::current(), facts, settings);
  }
  const launcher::JobPlan plan = launcher::plan_job(options, launcher::Environment::current(), facts);
  if (!options.dry_run) settings.signal_fd = launcher::open_supervisor_signalfd();
  const launcher::AttemptResult result = launcher::run_attempt(plan, settings);
  if (!result.outcome.final_line.empty()) std::cerr << result.outcome.final_line << std::endl;
  return result.outcome.exit_status;
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
