#include "ops/local_peers.h"

#include "base/launcher_rendezvous.h"
#include "ops/process_liveness.h"

namespace chorus {

std::optional<LocalPeer> LocalPeers::first_dead() const {
  for (const LocalPeer& peer : peers_) {
    if (!process_alive(peer.pid)) return peer;
    if (peer.start_time != 0) {
      const std::optional<uint64_t> now = process_start_time(peer.pid);
      if (now && *now != peer.start_time) return peer;  // the pid was reused
    }
  }
  return std::nullopt;
}

Status LocalPeers::watch(bool waiting, Clock::time_point now, const WaitingFor& waiting_for) {
  if (!waiting || peers_.empty()) {
    next_check_.reset();
    return Status::OK();
  }
  if (!next_check_) {
    next_check_ = now + kInterval;
    return Status::OK();
  }
  if (now < *next_check_) return Status::OK();
  next_check_ = now + kInterval;
  const std::optional<LocalPeer> dead = first_dead();
  if (!dead) return Status::OK();
  // A peer of this host died: chorusrun --elastic blames this host (the
  // launcher may end every rank before their own reports get out).
  report_lost_to_launcher(dead->rank, this_elastic_host());
  return Status::Aborted("rank " + std::to_string(dead->rank) + " (pid " + std::to_string(dead->pid) +
                         ") exited while rank " + std::to_string(me_) + " was waiting " + waiting_for(*dead) +
                         "; the job cannot continue");
}

LocalPeers::WaitingFor waiting_for_a_cycle(bool asked) {
  return [asked](const LocalPeer& dead) -> std::string {
    if (dead.rank == 0 && asked) return "for it to start a negotiation cycle";
    return "for the next negotiation cycle";
  };
}

}  // namespace chorus
