// How a job ended, from what chorusrun saw: the ranks' reports (in the order
// they arrived), the launcher process's own exit, a signal to chorusrun, a
// start timeout. Pure, so every case has a unit test.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reports/report_protocol.h"

namespace chorus::launcher {

struct JobRecord {
  int np = 0;
  std::string launcher = "mpirun";
  std::set<int> started;       // ranks whose wrapper said hello
  std::set<int> initialized;   // ranks that reached chorus::init()
  std::set<int> lost;          // ranks whose wrapper vanished without an exit report
  std::map<int, std::string> hosts;  // host names from the hellos
  std::vector<RankExit> exits; // in arrival order
  // Survivors' word that a rank stopped answering (their heartbeat or local
  // peer watch), sent before their job aborts: with --elastic, the hosts
  // they name are the ones blamed when every rank then vanishes.
  std::vector<LostReport> lost_reports;
  // How the launcher process (mpirun or srun) ended.
  bool launcher_signaled = false;
  int launcher_status = 0;
  std::optional<int> stopped_by_signal;  // chorusrun got SIGINT, SIGTERM or SIGHUP
  std::optional<double> start_timeout_seconds;  // set when the start timeout fired
};

struct JobOutcome {
  int exit_status = 0;
  std::string final_line;  // empty for a clean success
};

JobOutcome decide_outcome(const JobRecord& record);

// "rank 1 (on node2) exited with code 3", "rank 0 was killed by signal 9 (SIGKILL)"
std::string describe_exit(const RankExit& exit);
// "[0, 2]"
std::string format_ranks(const std::set<int>& ranks);

// Exit status of chorusrun when the start timeout stops a job (as timeout(1)).
inline constexpr int kStartTimeoutExitStatus = 124;

}  // namespace chorus::launcher
