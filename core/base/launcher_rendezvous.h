// The one place where a rank talks to chorusrun: init() reports that this
// rank got there, so chorusrun's --start-timeout can name the ranks that never
// did. chorusrun's rank wrapper sets the variables below; without them (a
// program started by plain mpirun, srun or by hand) nothing happens.
#pragma once

#include <mutex>
#include <string>

#include "base/config.h"

namespace chorus {

// host:port of chorusrun's report listener.
inline constexpr const char* kLauncherAddressVariable = "CHORUS_LAUNCHER_ADDRESS";
// The job's token, so that chorusrun ignores connections from other jobs.
inline constexpr const char* kLauncherTokenVariable = "CHORUS_LAUNCHER_TOKEN";
// This process's rank, as the MPI launcher numbered it.
inline constexpr const char* kLauncherRankVariable = "CHORUS_LAUNCHER_RANK";

// The exit status of a rank whose runtime ended the whole job
// (Communication::abort_job, core/contracts/communication.h): most often because a peer was lost,
// so chorusrun ranks such an exit below a rank killed by a signal, which is
// more likely the cause (sysexits' EX_SOFTWARE).
inline constexpr int kJobAbortExitCode = 70;

// The line init() sends: "init <token> <rank>\n". chorusrun parses it with
// the same words (launcher/reports/report_protocol.cc).
std::string launcher_init_message(const std::string& token, int rank);

// Connects a TCP socket to host:port within timeout_ms; returns the
// (blocking, close-on-exec) socket, or -1 with *error saying why.
int connect_with_timeout(const std::string& host, int port, int timeout_ms, std::string* error);

// Splits "host:port" (port 1..65535); false when it is not of that form.
bool split_launcher_address(const std::string& address, std::string* host, int* port);

// Connects to CHORUS_LAUNCHER_ADDRESS (a few seconds at most) and sends
// launcher_init_message. A failure is logged as a warning and otherwise
// ignored: the job itself does not depend on the launcher's bookkeeping.
void report_init_to_launcher(const Config::Lookup& lookup = nullptr);

// The line a rank sends when it saw another rank stop answering:
// "lost <token> <rank> <lost rank> <host>\n" (launcher/reports/report_protocol.h).
std::string launcher_lost_message(const std::string& token, int rank, int lost_rank, const std::string& host);

// Tells chorusrun (when it started this rank: CHORUS_LAUNCHER_ADDRESS set)
// that `lost_rank`, on the host chorus::elastic_host_name calls `host`,
// stopped answering, so that chorusrun --elastic blames that host alone when
// the job's abort then ends every rank. Called by the heartbeat's loss and
// the local peer watch, shortly before the job is aborted (2 s later at the
// earliest), so it never blocks its caller: the connection and the line go
// from a thread of its own, bounded by kLostReportTimeoutMs.
// Only the first loss a process sees is reported: it is the one that stops
// its runtime. A rank that ends afterwards is most often a survivor that
// aborted the job over that same loss (seen under srun: a rank's local peer
// watch saw its neighbour's abort and blamed their healthy host), so later
// calls, for the same rank or another, do nothing.
class LostRankReporter {
 public:
  void report(int lost_rank, const std::string& host, const Config::Lookup& lookup = nullptr);

 private:
  std::mutex mutex_;
  bool reported_ = false;
};

// The process's LostRankReporter.
void report_lost_to_launcher(int lost_rank, const std::string& host, const Config::Lookup& lookup = nullptr);

// How long report_lost_to_launcher's thread may take to connect (a cut-off
// chorusrun must not hold it past the abort).
inline constexpr int kLostReportTimeoutMs = 1000;

// This host as chorusrun --elastic names it: the Slurm node under Slurm,
// else the host name (chorus::elastic_host_name).
std::string this_elastic_host();

}  // namespace chorus
