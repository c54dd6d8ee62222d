// What the crash probes share: every rank's pid, the peers a rank watches,
// the error a surviving rank got for the killed one, and the report lines
// that run_shm_crash_test.sh reads.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "ops/local_peers.h"

namespace chorus {

// Every rank's pid, by rank (collective over MPI_COMM_WORLD); rank 0 prints
// "SHM_CRASH_CREATOR pid=<its pid>", whose segments the driver looks for.
inline std::vector<int> share_pids(int rank, int size) {
  std::vector<int> pids(static_cast<size_t>(size));
  const int mine = getpid();
  MPI_Allgather(&mine, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  if (rank == 0) std::printf("SHM_CRASH_CREATOR pid=%d\n", pids[0]);
  std::fflush(stdout);
  return pids;
}

// Every other rank as this rank's local peer (the probes run on one host).
inline LocalPeers peers_of(int rank, const std::vector<int>& pids) {
  std::vector<LocalPeer> peers;
  for (int r = 0; r < static_cast<int>(pids.size()); ++r) {
    if (r != rank) peers.push_back(LocalPeer{r, static_cast<pid_t>(pids[static_cast<size_t>(r)]), 0});
  }
  return LocalPeers(rank, std::move(peers));
}

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
