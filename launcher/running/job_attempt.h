// One run of a planned job: its report listener, the mpirun or srun command
// with the rank wrappers, and the watch until it ends. chorusrun runs one;
// chorusrun --elastic runs one per attempt (elastic/elastic_driver.*), each
// with a listener and token of its own so that nothing of an earlier attempt
// is mistaken for this one's.
#pragma once

#include <functional>

#include "plan/job_plan.h"
#include "running/job_outcome.h"
#include "running/job_runner.h"

namespace chorus::launcher {

struct AttemptSettings {
  bool is_root = false;
  bool dry_run = false;  // print the command and return success without running it
  bool verbose = false;
  int signal_fd = -1;    // from open_supervisor_signalfd()
  std::function<bool()> hosts_changed;  // see RunSettings
  double poll_seconds = 5.0;
};

struct AttemptResult {
  JobOutcome outcome;
  JobRecord record;
};

AttemptResult run_attempt(const JobPlan& plan, const AttemptSettings& settings);

// Tells this job's reports from anything else that connects to the port.
std::string random_token();

}  // namespace chorus::launcher
