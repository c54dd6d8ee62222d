// What the crash probes check and print, the same way for each: the error a
// surviving rank got for the killed one, and the report line that
// run_shm_crash_test.sh counts.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

#include "chorus/status.h"

namespace chorus {

// Empty when `status` is an Aborted error containing `expected`; else why
// not (`succeeded` says what it means that the call did not fail).
inline std::string wrong_crash_error(const Status& status, const std::string& expected, const std::string& succeeded) {
  if (status.ok()) return succeeded;
  if (status.message().find(expected) == std::string::npos) {
    return "unexpected error (wanted '" + expected + "'): " + status.to_string();
  }
  if (status.code() != StatusCode::kAborted) return "wrong code: " + status.to_string();
  return "";
}

// Prints "SHM_CRASH_SURVIVOR rank=<r> ok" (or "... FAILED: <why>") and
// ends the process without MPI_Finalize, which could wait for the dead
// rank forever.
[[noreturn]] inline void report_survivor_and_exit(int rank, const std::string& failure) {
  std::printf("SHM_CRASH_SURVIVOR rank=%d %s%s\n", rank, failure.empty() ? "ok" : "FAILED: ", failure.c_str());
  std::fflush(stdout);
  _exit(0);
}

}  // namespace chorus
