// Runtime: the one object that owns Chorus's state in a process: the
// configuration, the communication layer, the tensor queue, the controller,
// the executor, the timeline and the background thread that drives them.
// A framework thread that waits for a result may run the loop's cycles in
// its stead, holding the cycle token (runtime/cycle_token.h); whoever holds
// the token owns what the loop touches.
//
// The background loop:
//   wait until a cycle starts (local work, a peer's request, or a timer)
//   take the requests enqueued since the last cycle
//   negotiate: every rank gets the same ordered responses
//   plan fusion and execute each unit, completing handles
//   on a shutdown response, fail what is still pending and stop
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "autotune/autotuner.h"
#include "base/config.h"
#include "contracts/communication.h"
#include "protocol/controller.h"
#include "protocol/cycle_trigger.h"
#include "runtime/cycle_token.h"
#include "runtime/executor.h"
#include "runtime/handle_state.h"
#include "runtime/process_set_table.h"
#include "runtime/tensor_queue.h"
#include "runtime/timeline.h"

namespace chorus {

class Runtime {
 public:
  // Reads the configuration, sets up communication and starts the loop.
  // `blocked_waiters` counts the threads blocked on this runtime's handles;
  // `cycle_runner` (may be null) is what those threads call to run cycles
  // while they wait (handle_state.h). Both must outlive the runtime and
  // every handle it makes.
  // `custom`: backends for devices of the program's own (init_with_backends.h).
  static Status create(std::unique_ptr<Runtime>* out, detail::BlockedWaiters* blocked_waiters,
                       detail::CycleRunner* cycle_runner, const Config::Lookup& env = nullptr,
                       const std::vector<BackendMaker>& custom = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Topology& topology() const { return comm_->topology(); }
  bool supports(const Device& device) const { return comm_->backends().supports(device); }
  Status check_device(const std::string& name, const Device& device) const {
    return comm_->backends().check(name, device);
  }
  // Whether the backend of `device` reduces `dtype` (NCCL has no int16).
  Status check_reduction(const std::string& name, const Device& device, DataType dtype) const {
    return comm_->backends().check_reduction(name, device, dtype);
  }
  // Hands entries to the background thread; fails if a name is in flight
  // or the runtime has stopped.
  Status enqueue(std::vector<TensorEntry> entries) { return queue_.add(std::move(entries)); }
  Status enqueue(TensorEntry&& entry) { return queue_.add(std::move(entry)); }
  // OK while running; once the runtime has stopped (a peer shut down, a
  // stall, an internal error), why.
  Status stopped_reason() const { return queue_.closed() ? queue_.closed_reason() : Status::OK(); }
  // Tells the other ranks this rank is leaving and stops the background
  // thread. Idempotent. After a stop that some ranks may never acknowledge
  // (a stall shutdown), it ends the job (MPI_Abort) rather than return to a
  // release of communication that would wait for them.
  void shutdown();
  // Point-to-point (point_to_point_api.cc): the transport, and the progress
  // that its handles drive while they are tested or waited for.
  PointToPoint& point_to_point() { return *comm_->point_to_point(); }
  const std::shared_ptr<detail::HandleProgress>& point_to_point_progress() const { return p2p_progress_; }
  // Every rank calls barrier() the same number of times, so a counter names
  // the same barrier on every rank.
  std::string next_barrier_name() { return "chorus.barrier." + std::to_string(barrier_count_++); }
  // The one name of timeline control requests: a rank has at most one in
  // flight (start_timeline() and stop_timeline() wait), and a fixed name
  // stays the same on a rank that joined and took part without calling it.
  static const char* timeline_request_name() { return "chorus.timeline"; }
  // The process sets that exist on this rank (the background thread updates
  // it as it processes add and remove responses).
  ProcessSetTable& process_sets() { return process_sets_; }
  // Every rank adds and removes sets in the same order (they are collective
  // over the job), so counters name the same request on every rank.
  std::string next_add_set_name() { return "chorus.process_set.add." + std::to_string(add_set_count_++); }
  std::string next_remove_set_name() { return "chorus.process_set.remove." + std::to_string(remove_set_count_++); }
  // A failure is one rank's request: its name carries the rank, since every
  // rank receives the response and only the requester completes a handle.
  std::string next_fail_set_name() {
    return "chorus.process_set.fail." + std::to_string(topology().rank) + "." + std::to_string(fail_set_count_++);
  }
  // The state of a new handle for `op` with `members` members, counted in
  // the blocked waiters while a thread is blocked waiting on it; its waits
  // run cycles only where waiters may.
  std::shared_ptr<detail::HandleState> new_handle(const std::string& name, OpType op, int members = 1) const {
    return std::make_shared<detail::HandleState>(name, op, members, blocked_waiters_,
                                                 waiters_run_cycles_ ? cycle_runner_ : nullptr);
  }
  // A framework thread that waits for a result: runs cycles until `done`,
  // if it can take the cycle token (cycle_token.h). Returns false, having
  // run nothing, when another thread runs them or this job's trigger does
  // not let waiters run cycles; then the caller blocks as usual.
  bool run_cycles_until(const std::function<bool()>& done);

 private:
  Runtime(const Config& config, std::unique_ptr<Communication> comm, detail::BlockedWaiters* blocked_waiters,
          detail::CycleRunner* cycle_runner);
  // How one cycle ended. `started`: false when the wait for it stopped
  // (LocalWork::stop_waiting) before any started.
  struct CycleOutcome {
    Status status;
    bool stop = false;  // a shutdown response: the loop ends
    bool started = true;
    bool ended_loop() const { return stop || !status.ok(); }
  };
  // Collective: OK when `local` is OK on every rank; else this rank's own
  // error, or an error naming the ranks that failed (`what` they failed at).
  Status agree(const Status& local, const std::string& what);
  void background_loop();
  // Waits for the next cycle and runs it, on the token's holder.
  CycleOutcome next_cycle(const LocalWork& work);
  Status run_cycle(bool* stop);
  bool has_local_work() const;
  void stop_for(const Response& shutdown);
  // Every rank, at the same point of the response order: creates the set's
  // backends (collective over the job) and completes the add's handle.
  Status add_process_set(const Response& added);
  // Fails the set's entries still in flight here, releases its backends and
  // completes the remove's handle.
  void remove_process_set(const Response& removed);
  // Every rank, at the same point: records the set's failure, fails the
  // set's entries in flight here with it (later submissions fail in the API
  // or, if they raced past it, in the coordinator) and, on the failing
  // rank, completes fail_process_set's handle. Its backends stay until the
  // set is removed.
  void fail_process_set(const Response& failed);
  // Every rank, at the same point of the response order: rank 0 starts or
  // stops writing its timeline, and every rank completes its request (if it
  // has one: a joined rank takes part without) with rank 0's outcome.
  Status control_timeline(const Response& response);
  // Rank 0: what start_timeline() or stop_timeline() does to the timeline.
  Status start_timeline(const Response& response);
  Status stop_timeline();
  // A joined rank takes part in the global set's barriers without calling
  // them: its barrier count moves past their names, so that its next
  // barrier has the name the other ranks' next one has.
  void count_barrier(const Response& barrier);
  // Whether this rank runs `response`: not when it belongs to a process set
  // this rank is not a member of.
  bool runs_here(const Response& response) const;
  void fail_pending(const Status& closed, const std::function<Status(const TensorEntry&)>& error_for);
  // Fails the point-to-point transfers in flight, each with why(it).
  void close_point_to_point(const PointToPoint::ErrorFor& why);
  // The heartbeat's news (on its thread): a peer stopped answering. Fails
  // everything pending here with `why`, the collective running included, and
  // aborts the backends; the heartbeat then ends the job.
  void peer_lost(const Status& why);
  // After a lost peer, ends the job now (finalizing MPI would wait for it).
  void end_if_peer_lost();
  // What the autotuner searches, each knob with how this runtime applies it
  // (from the cycle that delivers a new setting, on the background thread).
  std::vector<TuningKnob> tuning_knobs();

  Config config_;
  // CHORUS_FUSION_THRESHOLD, or the autotuner's current choice.
  int64_t fusion_threshold_bytes_;
  std::unique_ptr<Communication> comm_;
  std::shared_ptr<detail::HandleProgress> p2p_progress_;
  detail::BlockedWaiters* const blocked_waiters_;
  detail::CycleRunner* const cycle_runner_;
  // CHORUS_AUTOTUNE=1 only. Their number sizes the controller's coordinator
  // words (TuningMessage::words), hence before controller_.
  const std::vector<TuningKnob> tuning_knobs_;
  ProcessSetTable process_sets_;
  TensorQueue queue_;
  Controller controller_;
  Timeline timeline_;
  Executor executor_;
  std::unique_ptr<Autotuner> autotuner_;  // CHORUS_AUTOTUNE=1 only
  // Whether the timeline marks each cycle (start_timeline(); the cycle
  // token's holder only).
  bool mark_cycles_ = false;
  std::atomic<bool> shutdown_requested_{false};
  bool shutdown_sent_ = false;  // the cycle token's holder only
  CycleToken cycle_token_;
  // Every backend a cycle may run (process sets' too: host memory only) and
  // every wait of the trigger's let a framework thread run cycles.
  const bool waiters_run_cycles_;
  // What the trigger asks of the background thread, and of a waiter that
  // runs cycles until *waiter_done_ (set while it holds the token).
  LocalWork background_work_;
  LocalWork waiter_work_;
  const std::function<bool()>* waiter_done_ = nullptr;
  // A waiter's cycles that ended the loop (a shutdown response or an error),
  // handed over with the token to the background thread, which ends it.
  CycleOutcome handed_over_;
  // Why the job stopped without every rank's consent (a stall shutdown, an error
  // that stopped this rank); written by the background thread, read by shutdown() after joining it.
  std::string peers_lost_;
  // Not before then does shutdown() end the job (the grace after an error
  // that stopped this rank); background thread, read after joining it.
  std::chrono::steady_clock::time_point end_job_at_{};
  std::atomic<uint64_t> barrier_count_{0};
  std::atomic<uint64_t> add_set_count_{0};
  std::atomic<uint64_t> remove_set_count_{0};
  std::atomic<uint64_t> fail_set_count_{0};
  std::thread thread_;
  // CHORUS_HEARTBEAT_TIMEOUT_SECONDS > 0 only. Last, so it is destroyed
  // first: its thread calls peer_lost().
  std::unique_ptr<PeerWatch> heartbeat_;
};

}  // namespace chorus
