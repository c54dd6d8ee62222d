#include "running/job_outcome.h"

#include <sstream>
#include <utility>

#include "base/launcher_rendezvous.h"

namespace chorus::launcher {
namespace {

std::set<int> missing_from(int np, const std::set<int>& present) {
  std::set<int> missing;
  for (int r = 0; r < np; ++r) {
    if (!present.count(r)) missing.insert(r);
  }
  return missing;
}

std::string format_seconds(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

std::string launcher_status_text(const JobRecord& record) {
  if (record.launcher_signaled) {
    return record.launcher + " was killed by signal " + std::to_string(record.launcher_status) + " (" +
           signal_name(record.launcher_status) + ")";
  }
  return record.launcher + " exited with code " + std::to_string(record.launcher_status);
}

int exit_status_for(const RankExit& exit) { return exit.signaled ? 128 + exit.value : exit.value; }

// The runtime ended the job, most often because it saw a peer die.
bool is_job_abort(const RankExit& exit) { return !exit.signaled && exit.value == kJobAbortExitCode; }

// The failing exit (not told to stop) most likely to be the job's cause,
// whatever order the reports came in: a rank a survivor reported lost (its
// heartbeat or local peer watch saw it go), then any but the runtime's abort
// of the job (a consequence of another rank's loss when one was lost), then
// the first to arrive. nullptr when none failed on its own.
const RankExit* root_cause(const JobRecord& record) {
  std::set<int> reported_lost;
  for (const LostReport& report : record.lost_reports) reported_lost.insert(report.rank);
  const auto key = [&](const RankExit& exit) {
    return std::make_pair(reported_lost.count(exit.rank) == 0, is_job_abort(exit));
  };
  const RankExit* best = nullptr;
  for (const RankExit& exit : record.exits) {
    if (exit.ok() || exit.stopped) continue;
    if (best == nullptr || key(exit) < key(*best)) best = &exit;
  }
  return best;
}

}  // namespace

std::string format_ranks(const std::set<int>& ranks) {
  std::string out = "[";
  for (int r : ranks) out += (out.size() > 1 ? ", " : "") + std::to_string(r);
  return out + "]";
}

std::string describe_exit(const RankExit& exit) {
  std::string who = "rank " + std::to_string(exit.rank) + (exit.host.empty() ? "" : " (on " + exit.host + ")");
  if (exit.signaled) {
    return who + " was killed by signal " + std::to_string(exit.value) + " (" + signal_name(exit.value) + ")";
  }
  return who + " exited with code " + std::to_string(exit.value);
}

JobOutcome decide_outcome(const JobRecord& record) {
  if (record.start_timeout_seconds) {
    std::string line = "chorusrun: start timeout: rank(s) " +
                       format_ranks(missing_from(record.np, record.initialized)) +
                       " did not reach chorus::init() within " + format_seconds(*record.start_timeout_seconds) +
                       " s";
    if (!record.initialized.empty()) line += " (rank(s) " + format_ranks(record.initialized) + " did)";
    return {kStartTimeoutExitStatus, line + "; the job was stopped"};
  }
  if (record.stopped_by_signal) {
    return {128 + *record.stopped_by_signal,
            "chorusrun: stopped by " + signal_name(*record.stopped_by_signal) + "; every rank was ended"};
  }
  const int launcher_failure = record.launcher_signaled ? 128 + record.launcher_status : record.launcher_status;
  const int failure_status = launcher_failure != 0 ? launcher_failure : 1;
  std::set<int> exited;
  for (const RankExit& exit : record.exits) exited.insert(exit.rank);
  // Started but never said how it ended: its wrapper was killed, or its
  // host was lost (a cut link closes nothing, so it cannot be told apart).
  std::set<int> unreported = record.lost;
  for (int rank : record.started) {
    if (!exited.count(rank)) unreported.insert(rank);
  }
  // A rank that failed on its own is the cause; ranks stopped afterwards
  // (their wrapper was told to stop them) are consequences. Of those that
  // failed on their own, the most likely cause is chosen by what they are,
  // not by which report came first (a survivor's abort often arrives before
  // the report of the rank it saw die).
  if (const RankExit* cause = root_cause(record)) {
    // A rank that vanished outranks one that only aborted the job.
    if (!(is_job_abort(*cause) && !unreported.empty())) {
      return {exit_status_for(*cause), "chorusrun: " + describe_exit(*cause)};
    }
  }
  if (!unreported.empty()) {
    return {failure_status, "chorusrun: rank(s) " + format_ranks(unreported) +
                                " ended without reporting how (their host or their chorusrun rank wrapper was lost); " +
                                launcher_status_text(record)};
  }
  for (const RankExit& exit : record.exits) {
    if (!exit.ok()) return {exit_status_for(exit), "chorusrun: " + describe_exit(exit) + " after being told to stop"};
  }
  const std::set<int> never_started = missing_from(record.np, record.started);
  if (!never_started.empty()) {
    return {failure_status, "chorusrun: " + launcher_status_text(record) + "; rank(s) " +
                                format_ranks(never_started) + " never started"};
  }
  if (launcher_failure != 0) {
    return {launcher_failure, "chorusrun: " + launcher_status_text(record) + " although every rank exited 0"};
  }
  return {0, ""};
}

}  // namespace chorus::launcher
