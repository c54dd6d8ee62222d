// Starting and watching processes: fork/exec with a clean signal state,
// signalfd for the signals a supervisor waits for, and small I/O helpers.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "process/command.h"

namespace chorus::launcher {

struct SpawnOptions {
  int stdout_fd = -1;  // -1: inherit
  int stderr_fd = -1;
  bool own_process_group = false;
  // Signal the child gets when its parent dies (prctl PR_SET_PDEATHSIG), so
  // that nothing outlives a supervisor that was killed. 0: none.
  int parent_death_signal = 0;
};

// Starts command.argv[0] (searched on PATH) with command.environment added
// to ours. Returns the pid, or -1 with *error saying why it could not run
// (the exec failure is reported back from the child, so "not found" is
// known here, not only as exit status 127).
pid_t spawn_process(const Command& command, const SpawnOptions& options, std::string* error);

struct CapturedOutput {
  std::string output;  // stdout and stderr together
  int status = 0;      // as from waitpid
};
bool capture_output(const std::vector<std::string>& argv, CapturedOutput* result, std::string* error);

// Blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP for this process and returns a
// signalfd that reads them; ignores SIGPIPE (sockets report EPIPE instead).
// Children started by spawn_process get the default signal state back.
int open_supervisor_signalfd();
// Reads one pending signal from the signalfd, 0 when none.
int read_signal(int signal_fd);

// Writes everything, retrying on EINTR; false on error.
bool write_all(int fd, const std::string& data);

// Seconds since an arbitrary fixed point (steady clock).
double monotonic_seconds();

// Milliseconds until `deadline` (monotonic seconds), clamped to [0, cap];
// cap when there is no deadline (deadline < 0).
int poll_timeout_ms(double deadline, int cap_ms = 1000);

}  // namespace chorus::launcher
