// Heartbeat: a thread of its own per rank that notices a peer that stopped
// answering (crashed, frozen, cut off) within a timeout, whatever launched
// the job and whichever backend runs the collectives.
//
// Why a side channel and a thread of its own: a peer that is frozen
// (SIGSTOP) or cut off makes MPI calls wait forever without an error, and the
// background thread and the user's threads may be inside such a call, or
// simply busy (a long step): neither can be the one that notices. So each
// rank has one UDP socket (bound to every address; the addresses peers use
// are exchanged once at init: heartbeat_card.h) and one thread that sleeps in
// poll() between beats and wakes only to send one, to receive one, or when
// a deadline passes. Nothing here calls MPI after start().
//
// The ring: rank r sends a beat to rank r+1 (mod size) every timeout/4 and
// watches rank r-1, so each rank sends and receives one datagram per interval
// whatever the size of the job. A watcher that heard nothing from its
// predecessor for the timeout declares it lost and tells every other rank
// (a LOST datagram, sent twice); any failure is seen by some survivor, since
// every set of ranks that cannot hear the rest has a predecessor outside it:
// when a link is cut, a rank on each side notices, so the ranks on the far
// side also learn it and end instead of lingering. A rank declared lost by a
// peer (one that was frozen and resumes) ends too.
//
// What a loss does: `on_lost` (the runtime fails every pending operation with
// the reason and aborts its backends), then, `end_grace` later (time for the
// program to hear the error and say so), `end_job` (MPI_Abort: the launcher
// then kills every process of the job, a frozen one included). The end runs
// on a thread of its own, so an `on_lost` that blocks cannot keep the job
// alive.
//
// A rank that is merely slow is not declared lost: the thread beats whatever
// the program does. If the heartbeat thread itself did not run for longer
// than the timeout allows (its own process was stopped or starved), it starts
// counting afresh instead of blaming the peer. A rank that shuts down says
// goodbye (BYE) to its watcher, which then stops watching it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chorus/status.h"
#include "contracts/communication.h"
#include "ops/heartbeat/heartbeat_card.h"
#include "ops/setup_channel.h"

namespace chorus {

// The runtime's PeerWatch; its options and what it reports of a loss
// (HeartbeatOptions, LostPeer, OnPeerLost) are core/contracts/communication.h's.
class Heartbeat final : public PeerWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // Ends the whole job; must not depend on objects that may be gone (it may
  // run after the heartbeat was stopped).
  using EndJob = std::function<void(const std::string& reason)>;

  // Collective over `channel` (every rank of the job): exchanges the cards
  // and starts the thread. Fails on every rank when one cannot (no usable
  // interface, a socket error), naming the ranks.
  static Status start(SetupChannel& channel, const HeartbeatOptions& options, OnPeerLost on_lost, EndJob end_job,
                      std::unique_ptr<Heartbeat>* out);
  ~Heartbeat() override;
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // Says goodbye to the watcher and stops the thread. Idempotent.
  void stop() override;
  // Whether a peer was lost; why.
  bool lost() const override { return lost_.load(std::memory_order_acquire); }
  Status lost_reason() const override;

 private:
  enum class Kind : uint32_t { kBeat = 1, kLost = 2, kBye = 3 };
  struct Datagram;

  Heartbeat(const HeartbeatOptions& options, int rank, int size, uint64_t job, int socket,
            std::vector<HeartbeatCard> cards, std::vector<uint32_t> addresses, OnPeerLost on_lost, EndJob end_job);
  void run();
  void send(Kind kind, int to, int subject, double silent_seconds);
  // Reads every datagram waiting; updates what the loop watches.
  void receive(Clock::time_point now);
  // `subject` stopped answering (or, when it is this rank, a peer says so).
  void declare(int subject, int reporter, double silent_seconds);
  std::string name_of(int rank) const;

  const HeartbeatOptions options_;
  const int rank_;
  const int size_;
  const uint64_t job_;  // rank 0's random tag: datagrams of other jobs are ignored
  const int socket_;
  const int wake_fd_;   // an eventfd: stop() ends the thread's poll
  const std::vector<HeartbeatCard> cards_;
  const std::vector<uint32_t> addresses_;  // where to send to each rank
  const OnPeerLost on_lost_;
  const EndJob end_job_;
  const int predecessor_;
  const int successor_;

  // The thread's own state.
  Clock::time_point last_heard_;
  bool watching_ = true;
  std::optional<Clock::time_point> resend_at_;  // the LOST datagrams' second copy
  int lost_subject_ = -1;
  double lost_silent_ = 0.0;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> lost_{false};
  mutable std::mutex mutex_;
  Status lost_reason_;
  std::thread thread_;
};

}  // namespace chorus
