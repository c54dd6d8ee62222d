// LocalPeers: the other ranks of this host and their processes, watched while
// this rank waits for them.
//
// A rank waits for its peers between cycles too: with collectives in flight
// it needs another rank's part, and a rank that asked for a cycle needs rank
// 0 to start it. There no collective is running, so nothing fails when a
// peer dies, and Open MPI may be told not to end the job on a dead rank
// (orte_abort_on_non_zero_status 0, as some schedulers and wrappers do): the
// wait would last until the stall inspector fires, or forever. So the cycle
// triggers check the processes of this host's peers between sleeps, once per
// interval, and only while they wait for them: an idle rank still sleeps
// without waking. A dead peer on another host is not visible this way: the
// heartbeat (ops/heartbeat/heartbeat.h) sees those, and frozen ones.
//
// A process is identified by its pid and its start time, which the peer
// reports itself: a pid reused after the peer died is not taken for it, and a
// peer in another pid namespace (whose pid means nothing here) is not watched.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

struct LocalPeer {
  int rank;              // in the job
  pid_t pid;
  uint64_t start_time;   // as process_start_time() reads it; 0: unknown
};

class LocalPeers {
 public:
  using Clock = std::chrono::steady_clock;
  // How often a waiting rank checks its peers: a dead one is named within this.
  static constexpr std::chrono::milliseconds kInterval{100};

  LocalPeers() = default;
  // `me`: this rank in the job; `peers`: the others on this host.
  LocalPeers(int me, std::vector<LocalPeer> peers) : me_(me), peers_(std::move(peers)) {}

  int me() const { return me_; }
  const std::vector<LocalPeer>& peers() const { return peers_; }
  // The first peer (in the order given) whose process has exited.
  std::optional<LocalPeer> first_dead() const;

  // What this rank was waiting for when `dead` died ("for the next
  // negotiation cycle"), for the error; called only on error.
  using WaitingFor = std::function<std::string(const LocalPeer& dead)>;
  // Call between sleeps of a wait. While `waiting` (this rank waits for its
  // peers), checks them once every kInterval, starting one interval after the
  // wait began: an error naming a dead peer.
  Status watch(bool waiting, Clock::time_point now, const WaitingFor& waiting_for);
  // How long a waiting rank may sleep before it must call watch() again.
  static Clock::duration longest_sleep() { return kInterval; }

 private:
  int me_ = 0;
  std::vector<LocalPeer> peers_;
  std::optional<Clock::time_point> next_check_;
};

// What a cycle trigger waits for: rank 0 to start the cycle this rank
// asked for (`asked`), or else the next cycle.
LocalPeers::WaitingFor waiting_for_a_cycle(bool asked);

}  // namespace chorus
