// Runs the launcher command (mpirun or srun) and watches the job through the
// ranks' reports until it ends; turns SIGINT/SIGTERM/SIGHUP and the start
// timeout into a stop of the whole job.
#pragma once

#include <functional>
#include <string>

#include "process/command.h"
#include "reports/report_listener.h"
#include "running/job_outcome.h"

namespace chorus::launcher {

struct RunSettings {
  int np = 0;
  std::string launcher_name = "mpirun";
  std::string token;
  double start_timeout_seconds = 0.0;  // 0: none
  // After asking the launcher to stop (SIGTERM), how long before SIGKILL.
  double kill_grace_seconds = 5.0;
  // After the launcher exits, how long to wait for reports still in flight.
  double drain_seconds = 2.0;
  // After a rank reported another lost (`lost`: its runtime aborts the job
  // 2 s later), how long the launcher may take to end. A host that froze
  // keeps mpirun waiting for its stopped orted for ever (TEST-CLUSTERS.md),
  // so chorusrun then stops the launcher itself (SIGTERM, SIGKILL after
  // lost_kill_grace_seconds: the ranks were aborted already).
  double lost_launcher_grace_seconds = 3.0;
  double lost_kill_grace_seconds = 1.0;
  // --elastic: asked every poll_seconds while the job runs; once it returns
  // true, every rank wrapper is told that the hosts changed (and any that
  // says hello later is told at once).
  std::function<bool()> hosts_changed;
  double poll_seconds = 5.0;
};

// `signal_fd` comes from open_supervisor_signalfd(), opened before anything
// was started. Returns how the job ended; `record`, when given, receives
// what it was decided from.
JobOutcome run_job(const Command& command, const RunSettings& settings, ReportListener* listener, int signal_fd,
                   JobRecord* record = nullptr);

}  // namespace chorus::launcher
