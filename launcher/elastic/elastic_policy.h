// The decisions of chorusrun --elastic, pure so that each has a unit test:
// which hosts an attempt runs on, how an attempt ended (success, the ranks
// asking to grow, a lost host, the program's own error, a stop) and which
// hosts to leave out afterwards. The loop that runs attempts is
// elastic_driver.*; docs/DESIGN.md, "Elastic training", explains the choices.
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "options/host_list.h"
#include "running/job_outcome.h"

namespace chorus::launcher {

// Hosts left out after a failure, each until a time (monotonic seconds;
// infinity: for good).
class HostBlacklist {
 public:
  void add(const std::string& host, double until) { until_[host] = until; }
  bool excludes(const std::string& host, double now) const;
  // The hosts excluded at `now`, sorted.
  std::set<std::string> excluded(double now) const;

 private:
  std::map<std::string, double> until_;
};

struct Placement {
  std::vector<Host> hosts;  // the hosts used, in order, slots trimmed to np in all
  int np = 0;
  int available_slots = 0;  // slots of every usable host, before max_np
};

// Fills the usable hosts (available minus blacklisted) in order, up to
// `wanted` ranks when given, else up to max_np when given, else every slot.
Placement place_ranks(const std::vector<Host>& available, const HostBlacklist& blacklist, double now,
                      std::optional<int> wanted, std::optional<int> max_np);

// The host of each rank when mpirun maps ranks by slot over `hosts` (what
// chorusrun asks for): the first host's slots get the first ranks.
std::vector<std::string> hosts_by_slot(const std::vector<Host>& hosts, int np);

enum class AttemptEnd {
  kSucceeded,     // every rank exited 0
  kHostsChanged,  // the ranks stopped at a commit to be restarted on more hosts
  kHostFailure,   // a rank was lost or killed by a signal: its host is suspect
  kProgramError,  // a rank exited non-zero on its own, none was lost: not restarted
  kStopped,       // chorusrun was signalled, or the start timeout fired
};

struct AttemptVerdict {
  AttemptEnd end = AttemptEnd::kSucceeded;
  std::set<std::string> failed_hosts;  // for kHostFailure
};

// `rank_hosts[r]` names rank r's host as the host list does ("" if unknown).
AttemptVerdict judge_attempt(const JobRecord& record, const std::vector<std::string>& rank_hosts);

const char* attempt_end_name(AttemptEnd end);

}  // namespace chorus::launcher
