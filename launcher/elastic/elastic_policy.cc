#include "elastic/elastic_policy.h"

#include <algorithm>

#include "chorus/elastic.h"

namespace chorus::launcher {

bool HostBlacklist::excludes(const std::string& host, double now) const {
  const auto it = until_.find(host);
  return it != until_.end() && now < it->second;
}

std::set<std::string> HostBlacklist::excluded(double now) const {
  std::set<std::string> hosts;
  for (const auto& [host, until] : until_) {
    if (now < until) hosts.insert(host);
  }
  return hosts;
}

Placement place_ranks(const std::vector<Host>& available, const HostBlacklist& blacklist, double now,
                      std::optional<int> wanted, std::optional<int> max_np) {
  Placement placement;
  std::vector<Host> usable;
  for (const Host& host : available) {
    if (blacklist.excludes(host.name, now)) continue;
    usable.push_back(host);
    placement.available_slots += host.slots;
  }
  int limit = wanted ? *wanted : (max_np ? *max_np : std::numeric_limits<int>::max());
  if (max_np) limit = std::min(limit, *max_np);
  for (Host host : usable) {
    if (placement.np >= limit) break;
    host.slots = std::min(host.slots, limit - placement.np);
    placement.np += host.slots;
    placement.hosts.push_back(host);
  }
  return placement;
}

std::vector<std::string> hosts_by_slot(const std::vector<Host>& hosts, int np) {
  std::vector<std::string> ranks;
  for (const Host& host : hosts) {
    for (int s = 0; s < host.slots && static_cast<int>(ranks.size()) < np; ++s) ranks.push_back(host.name);
  }
  ranks.resize(static_cast<size_t>(std::max(np, 0)));
  return ranks;
}

AttemptVerdict judge_attempt(const JobRecord& record, const std::vector<std::string>& rank_hosts) {
  AttemptVerdict verdict;
  if (record.stopped_by_signal || record.start_timeout_seconds) {
    verdict.end = AttemptEnd::kStopped;
    return verdict;
  }
  const auto host_of = [&](int rank) {
    return rank >= 0 && rank < static_cast<int>(rank_hosts.size()) ? rank_hosts[static_cast<size_t>(rank)] : "";
  };
  std::set<int> exited;
  bool restart_asked = false, own_error = false;
  std::set<int> suspects = record.lost;  // connection closed without an exit report
  std::set<int> orphaned;                // their host's launcher daemon died
  for (const RankExit& exit : record.exits) {
    exited.insert(exit.rank);
    if (exit.orphaned) {
      orphaned.insert(exit.rank);
      continue;
    }
    if (exit.stopped) continue;  // a consequence of another rank's end
    if (exit.signaled) {
      suspects.insert(exit.rank);  // killed from outside (OOM, kill -9, a crash)
    } else if (exit.value == kElasticRestartExitCode) {
      restart_asked = true;
    } else if (exit.value != 0) {
      own_error = true;
    }
  }
  // Started but never said how it ended: its host (or wrapper) was lost.
  for (int rank : record.started) {
    if (!exited.count(rank)) suspects.insert(rank);
  }
  // Ranks that never started while others did: their host could not run them.
  if (!record.started.empty()) {
    for (int rank = 0; rank < record.np; ++rank) {
      if (!record.started.count(rank)) suspects.insert(rank);
    }
  }
  // A host whose slurmstepd (or orted) died is the one lost. The others'
  // wrappers may then vanish too without a report, killed with SIGKILL by the
  // launcher ending the step (seen under srun after the survivors' heartbeat
  // abort), so they are not blamed: if one was lost as well, the next attempt
  // fails again and names it, which costs a restart; leaving out a healthy
  // host would cost its slots for the rest of the job.
  //
  // Likewise the hosts the survivors' runtimes named (`lost` reports: their
  // heartbeat or local peer watch saw the rank stop answering, and they said
  // so before aborting): when a whole host is lost at once its launcher
  // daemon dies with its ranks, no wrapper is left to report an orphan, and
  // the survivors' abort then makes the launcher SIGKILL every other wrapper
  // too, so every rank vanished and only these reports tell the hosts apart.
  // The rank's host is taken from this attempt's placement when known (the
  // names the host list and the blacklist use), else from the report.
  // Conflicting reports (a cut link seen from both sides) blame every host
  // named: each may be the one at fault.
  std::set<std::string> named;
  for (const LostReport& report : record.lost_reports) {
    const std::string host = host_of(report.rank);
    if (!host.empty()) {
      named.insert(host);
    } else if (!report.host.empty()) {
      named.insert(report.host);
    }
  }
  // A report counts only when the attempt failed (a rank vanished, was
  // orphaned or exited non-zero: the program may have caught the
  // heartbeat's error and exited by itself before the abort).
  if (suspects.empty() && orphaned.empty() && !own_error) named.clear();
  if (!orphaned.empty() || !named.empty()) suspects = orphaned;
  if (!suspects.empty() || !named.empty()) {
    verdict.end = AttemptEnd::kHostFailure;
    verdict.failed_hosts = named;
    for (int rank : suspects) {
      const std::string host = host_of(rank);
      if (!host.empty()) verdict.failed_hosts.insert(host);
    }
    // No host to blame (nothing started, or unknown placement): the launch
    // itself failed, which a restart would repeat.
    if (verdict.failed_hosts.empty()) verdict.end = AttemptEnd::kProgramError;
    return verdict;
  }
  if (own_error) {
    verdict.end = AttemptEnd::kProgramError;
  } else if (restart_asked) {
    verdict.end = AttemptEnd::kHostsChanged;
  } else if (record.launcher_status != 0 || record.launcher_signaled ||
             static_cast<int>(exited.size()) < record.np) {
    // The launcher failed (or nothing started) although no rank did.
    verdict.end = AttemptEnd::kProgramError;
  } else {
    verdict.end = AttemptEnd::kSucceeded;
  }
  return verdict;
}

const char* attempt_end_name(AttemptEnd end) {
  switch (end) {
    case AttemptEnd::kSucceeded: return "succeeded";
    case AttemptEnd::kHostsChanged: return "hosts changed";
    case AttemptEnd::kHostFailure: return "host failure";
    case AttemptEnd::kProgramError: return "program error";
    case AttemptEnd::kStopped: return "stopped";
  }
  return "unknown";
}

}  // namespace chorus::launcher
