// Runs chorusrun as a child process for the integration tests: output
// captured, a deadline, an optional signal once a condition holds, and a
// scan of /proc for anything of the job still alive afterwards (every
// process of the job inherits a marker variable).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace chorus::launcher::testing {

struct RunResult {
  int wait_status = 0;
  std::string output;  // stdout and stderr, interleaved as written
  bool timed_out = false;
  std::vector<std::string> leftovers;  // "pid: cmdline" of job processes still alive
  size_t alive_at_signal = 0;          // job processes alive when the signal was sent
  int exit_code() const;               // -1 unless it exited normally
};

struct RunRequest {
  std::vector<std::string> args;  // after chorusrun
  double deadline_seconds = 90.0;
  // Checked between reads; when it first returns true, `signal` is sent to
  // chorusrun (or to its whole process group, as a terminal's Ctrl-C does).
  std::function<bool()> signal_when;
  int signal = 0;
  bool signal_process_group = false;
};

RunResult run_chorusrun(const std::string& chorusrun, const RunRequest& request);

// Lines of `output` that start with `prefix`.
std::vector<std::string> lines_starting_with(const std::string& output, const std::string& prefix);
std::string last_line(const std::string& output);

}  // namespace chorus::launcher::testing
