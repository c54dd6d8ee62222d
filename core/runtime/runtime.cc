#include "runtime/runtime.h"

#include <pthread.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "autotune/standard_knobs.h"
#include "runtime/fusion_planner.h"
#include "base/launcher_rendezvous.h"
#include "base/logging.h"
#include "protocol/settings_agreement.h"
#include "runtime/point_to_point_progress.h"

namespace chorus {

Status Runtime::create(std::unique_ptr<Runtime>* out, detail::BlockedWaiters* blocked_waiters,
                       detail::CycleRunner* cycle_runner, const Config::Lookup& env,
                       const std::vector<BackendMaker>& custom) {
  Config config;
  Status local = Config::from_env(&config, env);
  if (!local.ok()) config = Config();  // communication still connects, to agree on failing
  set_log_level(config.log_level);
  std::unique_ptr<Communication> comm;
  CHORUS_RETURN_IF_ERROR(connect_communication(&comm));
  set_log_rank(comm->topology().rank);
  // init() is collective: a rank that cannot start (a bad CHORUS_* value in
  // its environment) or that disagrees with rank 0 on a setting every rank
  // must share must not leave the others running and waiting for it
  // forever: every rank fails together, naming the ranks.
  CHORUS_RETURN_IF_ERROR(agree_on_settings(comm->controller_transport(), local, config));
  CHORUS_RETURN_IF_ERROR(comm->start(config, custom));
  std::unique_ptr<Runtime> runtime(new Runtime(config, std::move(comm), blocked_waiters, cycle_runner));
  if (!config.timeline_path.empty() && runtime->topology().rank == 0) {
    local = runtime->timeline_.open(config.timeline_path);
    runtime->mark_cycles_ = config.timeline_mark_cycles;
  }
  if (local.ok() && config.autotune) {
    local = Autotuner::create(config, runtime->tuning_knobs_, runtime->topology().rank, &runtime->autotuner_);
  }
  // Rank 0's timeline or autotune log may be unwritable: the same again.
  CHORUS_RETURN_IF_ERROR(runtime->agree(local, "could not start"));
  if (config.heartbeat_timeout_seconds > 0) {
    HeartbeatOptions options;
    options.timeout = std::chrono::duration<double>(config.heartbeat_timeout_seconds);
    options.interface = config.heartbeat_interface;
    CHORUS_RETURN_IF_ERROR(runtime->comm_->start_heartbeat(
        options,
        [r = runtime.get()](const Status& why, const LostPeer& peer) {
          // chorusrun --elastic learns which host to blame before the abort
          // ends every rank (a thread of its own: this one goes on at once).
          if (peer.rank >= 0) report_lost_to_launcher(peer.rank, peer.host_key);
          r->peer_lost(why);
        },
        &runtime->heartbeat_));
  }
  runtime->thread_ = std::thread([r = runtime.get()] { r->background_loop(); });
  CHORUS_LOG(kDebug, "started: rank " << runtime->topology().rank << " of " << runtime->topology().size);
  *out = std::move(runtime);
  return Status::OK();
}

Status Runtime::agree(const Status& local, const std::string& what) {
  const Topology& t = topology();
  std::vector<uint64_t> failed(static_cast<size_t>(t.size + 63) / 64, 0);
  if (!local.ok()) failed[t.rank / 64] |= uint64_t{1} << (t.rank % 64);
  CHORUS_RETURN_IF_ERROR(comm_->controller_transport()->allreduce_or(&failed));
  if (!local.ok()) return local;
  std::string ranks;
  for (int r = 0; r < t.size; ++r) {
    if ((failed[r / 64] >> (r % 64)) & 1) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  if (ranks.empty()) return Status::OK();
  return Status::Aborted("Chorus " + what + " on rank(s) [" + ranks +
                         "]; their own error says why, so this rank does not start either");
}

Runtime::Runtime(const Config& config, std::unique_ptr<Communication> comm,
                 detail::BlockedWaiters* blocked_waiters, detail::CycleRunner* cycle_runner)
    : config_(config),
      fusion_threshold_bytes_(config.fusion_threshold_bytes),
      comm_(std::move(comm)),
      p2p_progress_(std::make_shared<PointToPointProgress>(comm_->point_to_point())),
      blocked_waiters_(blocked_waiters),
      cycle_runner_(cycle_runner),
      tuning_knobs_(config_.autotune ? tuning_knobs() : std::vector<TuningKnob>{}),
      process_sets_(comm_->topology().size),
      queue_(comm_->topology().rank, comm_->trigger()->wake_signal()),
      controller_(comm_->controller_transport(), config_,
                  config_.autotune ? TuningMessage::words(tuning_knobs_.size()) : 0),
      executor_(
          [this](int32_t set, SetPlace* out) {
            if (set == 0) {
              *out = SetPlace{&comm_->backends(), topology().rank, topology().size, nullptr};
              return true;
            }
            return comm_->process_set(set, out);
          },
          &timeline_, [this] { comm_->trigger()->wake_signal()->notify(); }),
      waiters_run_cycles_(comm_->trigger()->lets_waiters_run_cycles() && comm_->backends().run_on_any_thread()) {
  background_work_ = LocalWork{[this] { return has_local_work(); },
                               [this] { return queue_.arrivals(); },
                               [this] { return blocked_waiters_->load(std::memory_order_relaxed) > 0; },
                               [this] { return queue_.holds_any(); },
                               [this] { cycle_token_.release_by_background(); },
                               [this] { cycle_token_.take_for_background(); },
                               [this] { return handed_over_.ended_loop(); }};
  // A waiter asks the same of its own work, but is the thread that would
  // produce more (it waits now) and holds the token throughout.
  waiter_work_ = background_work_;
  waiter_work_.caller_waits = [] { return true; };
  waiter_work_.before_yield = [] {};
  waiter_work_.after_yield = [] {};
  waiter_work_.stop_waiting = [this] { return (*waiter_done_)(); };
}

// In the log's column order; a new knob is one more entry (standard_knobs.h
// describes these three).
std::vector<TuningKnob> Runtime::tuning_knobs() {
  return {
      fusion_threshold_knob(config_).applied_by([this](const KnobValue& bytes) {
        fusion_threshold_bytes_ = static_cast<int64_t>(bytes.number);
        return Status::OK();
      }),
      cycle_time_knob(config_).applied_by([this](const KnobValue& ms) {
        comm_->trigger()->set_min_interval_ms(ms.number);
        return Status::OK();
      }),
      algorithm_knob(config_, comm_->allreduce_algorithms()).applied_by([this](const KnobValue& algorithm) {
        return comm_->use_allreduce_algorithm(algorithm.label);
      }),
  };
}

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  // The background thread may be inside a collective with the lost rank.
  end_if_peer_lost();
  if (thread_.joinable()) {
    shutdown_requested_ = true;
    comm_->trigger()->wake_signal()->notify();
    cycle_token_.wake_background();
    thread_.join();
  }
  end_if_peer_lost();
  // Every rank has left the negotiation: stop watching each other (a rank
  // that stopped is not lost: it says goodbye).
  if (heartbeat_) heartbeat_->stop();
  end_if_peer_lost();
  // The shutdown cycle closed point-to-point already, unless the loop had
  // stopped before it.
  close_point_to_point([me = topology().rank](const TransferInfo& info) {
    return Status::Shutdown("Chorus has been shut down on rank " + std::to_string(me) + " while a " +
                            describe(info) + " was pending");
  });
  // Collectives still on a device complete (or fail) before it goes away.
  executor_.drain();
  timeline_.close();
  // Finalizing MPI waits for every rank to finalize too, and a rank the job
  // stopped for may never get there (one stuck in its own code, say): end
  // the whole job instead, so no rank is left waiting.
  if (!peers_lost_.empty()) {
    std::this_thread::sleep_until(end_job_at_);
    comm_->abort_job(peers_lost_ + "; ending the job here, since finalizing MPI would wait for the ranks "
                                   "that stopped responding");
  }
}

bool Runtime::has_local_work() const {
  return queue_.has_new() || controller_.needs_cycle() || (shutdown_requested_ && !shutdown_sent_) ||
         executor_.failed();
}

Runtime::CycleOutcome Runtime::next_cycle(const LocalWork& work) {
  CycleOutcome outcome;
  try {
    outcome.status = comm_->trigger()->wait_for_cycle(work, controller_.next_deadline());
    if (outcome.status.code() == StatusCode::kInProgress) return CycleOutcome{Status::OK(), false, false};
    if (outcome.status.ok()) outcome.status = run_cycle(&outcome.stop);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc
    outcome.status = Status::Internal(std::string("exception while running a cycle: ") + e.what());
  }
  return outcome;
}

bool Runtime::run_cycles_until(const std::function<bool()>& done) {
  if (!waiters_run_cycles_ || !cycle_token_.try_take()) return false;
  waiter_done_ = &done;
  CycleOutcome outcome;
  while (!done()) {
    outcome = next_cycle(waiter_work_);
    if (!outcome.started || outcome.ended_loop()) break;
  }
  waiter_done_ = nullptr;
  const bool ended = outcome.ended_loop();
  if (ended) handed_over_ = outcome;
  // Work left in flight (the waiter's other tensors, a burst enqueued
  // meanwhile) needs the background thread's cycles; so does an end.
  cycle_token_.hand_back(ended || queue_.holds_any());
  return true;
}

void Runtime::background_loop() {
  pthread_setname_np(pthread_self(), "chorus-bg");
  // Held from here on but while the trigger yields the CPU, and for good
  // once the loop ends: no waiter runs cycles of a loop that has ended.
  cycle_token_.take_for_background();
  while (true) {
    CycleOutcome outcome = std::exchange(handed_over_, CycleOutcome{});
    if (!outcome.ended_loop()) outcome = next_cycle(background_work_);
    if (!outcome.ended_loop()) continue;
    const Status status = outcome.status;
    if (status.ok()) return;
    // A lost peer makes collectives fail; the heartbeat has failed what was
    // pending with the reason and ends the job after its grace.
    if (heartbeat_ && heartbeat_->lost()) return;
    // This rank can no longer take part in collectives, and the others may
    // already be waiting inside one for it: they would wait forever. Fail
    // what is pending here, then end the job with the reason.
    CHORUS_LOG(kError, "stopping after an internal error: " << status.message());
    const Status failed = Status::Aborted("Chorus stopped after an internal error: " + status.message());
    comm_->backends().abort_all(failed.message());
    fail_pending(failed, [&](const TensorEntry&) { return failed; });
    // The job ends the heartbeat's grace later (a dead local peer ends up
    // here too): time for the program to hear the error and for the other
    // survivors on this host to notice the loss within LocalPeers' interval
    // and raise their own errors. shutdown() ends it then (finalizing MPI
    // would wait for the ranks that are gone); the thread ends it in a
    // program that never calls shutdown().
    const auto grace = HeartbeatOptions{}.end_grace;
    peers_lost_ = failed.message();
    end_job_at_ = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(grace);
    comm_->abort_job_after(grace, failed.message());
    return;
  }
}

Status Runtime::run_cycle(bool* stop) {
  // A collective that failed on its device after the executor moved on: this
  // rank cannot go on.
  CHORUS_RETURN_IF_ERROR(executor_.failure());
  if (mark_cycles_) timeline_.mark_cycle();
  std::vector<Request> requests = queue_.take_new_requests();
  if (shutdown_requested_ && !shutdown_sent_) {
    Request request;
    request.name = "chorus.shutdown";
    request.op = OpType::kShutdown;
    request.rank = topology().rank;
    requests.push_back(std::move(request));
    shutdown_sent_ = true;
  }
  std::vector<Response> responses;
  if (autotuner_) controller_.set_coordinator_words(autotuner_->words());
  CHORUS_RETURN_IF_ERROR(controller_.negotiate(std::move(requests), &responses));
  const auto negotiated = std::chrono::steady_clock::now();
  if (autotuner_) {
    // Every rank gets rank 0's words in the same cycle, so every rank plans
    // this cycle's fusion (and routes its allreduces) with the same setting.
    if (auto settings = autotuner_->receive(controller_.coordinator_words(), controller_.stats().cycles)) {
      CHORUS_RETURN_IF_ERROR(autotuner_->space().apply(*settings));
    }
  }
  CHORUS_LOG(kTrace, "cycle: " << responses.size() << " responses");

  // Everything negotiated runs, even in a shutdown cycle: it is ready on
  // every rank, so every rank runs it. The responses move into the plan; the
  // autotuner, which looks at them after they ran, gets a copy.
  std::vector<Response> observed;
  if (autotuner_) observed = responses;
  const auto is_shutdown = [](const Response& r) { return r.type == Response::Type::kShutdown; };
  std::optional<Response> shutdown;
  auto first_shutdown = std::find_if(responses.begin(), responses.end(), is_shutdown);
  if (first_shutdown != responses.end()) {
    shutdown = *first_shutdown;
    responses.erase(std::remove_if(responses.begin(), responses.end(), is_shutdown), responses.end());
  }
  // Every rank receives every set's responses; it runs those of its own
  // sets (and errors, which fail whatever it holds under their names).
  responses.erase(std::remove_if(responses.begin(), responses.end(),
                                 [this](const Response& r) { return !runs_here(r); }),
                  responses.end());
  for (const ExecutionUnit& unit : plan_fusion(std::move(responses), fusion_threshold_bytes_)) {
    switch (unit.front().type) {
      case Response::Type::kAddProcessSet:
        CHORUS_RETURN_IF_ERROR(add_process_set(unit.front()));
        break;
      case Response::Type::kRemoveProcessSet:
        remove_process_set(unit.front());
        break;
      case Response::Type::kFailProcessSet:
        fail_process_set(unit.front());
        break;
      case Response::Type::kStartTimeline:
      case Response::Type::kStopTimeline:
        CHORUS_RETURN_IF_ERROR(control_timeline(unit.front()));
        break;
      case Response::Type::kBarrier:
        count_barrier(unit.front());
        CHORUS_RETURN_IF_ERROR(executor_.execute(unit, &queue_, negotiated));
        break;
      default:
        CHORUS_RETURN_IF_ERROR(executor_.execute(unit, &queue_, negotiated));
        break;
    }
  }
  if (autotuner_) autotuner_->observe(observed, std::chrono::steady_clock::now());
  // What this cycle traced reaches the file now, not when stdio's buffer
  // fills: a running job's timeline can be read (and Horovod's users read
  // theirs that way), and an idle runtime runs no further cycle to push it.
  timeline_.flush();
  if (shutdown) {
    stop_for(*shutdown);
    *stop = true;
  }
  return Status::OK();
}

bool Runtime::runs_here(const Response& response) const {
  if (response.process_set == 0 || response.type == Response::Type::kError) return true;
  // Sets are added and removed only by responses that fusion keeps in
  // order (fences), and no response of a set precedes its add: membership
  // as of now is membership at this response's point of the order.
  SetPlace place;
  return comm_->process_set(response.process_set, &place);
}

Status Runtime::add_process_set(const Response& added) {
  const std::vector<int> ranks(added.set_ranks.begin(), added.set_ranks.end());
  // Collective over the job, here on every rank: a failure leaves ranks
  // disagreeing on the set's backends, so the runtime stops.
  const Status created = comm_->add_process_set(added.set_id, ranks);
  if (!created.ok()) {
    return Status(created.code(), "could not set up process set " + std::to_string(added.set_id) + " " +
                                      ProcessSetTable::describe(ranks) + ": " + created.message());
  }
  process_sets_.add(added.set_id, ranks);
  CHORUS_LOG(kDebug, "process set " << added.set_id << " " << ProcessSetTable::describe(ranks) << " added");
  if (std::optional<TensorEntry> entry = queue_.take(added.name)) {
    entry->handle->set_process_set_id(added.set_id);
    entry->handle->complete_member(Status::OK());
  }
  return Status::OK();
}

void Runtime::remove_process_set(const Response& removed) {
  const int32_t id = removed.set_id;
  std::vector<int> ranks;
  (void)process_sets_.ranks(id, &ranks);
  // Out of the table first: a submission that checked the set before this
  // and is enqueued after the entries below were taken fails in the
  // coordinator instead (the set is unknown there).
  process_sets_.remove(id);
  for (TensorEntry& entry : queue_.take_set(id)) {
    entry.handle->complete_member(Status::Aborted(
        "process set " + std::to_string(id) + " " + ProcessSetTable::describe(ranks) + " was removed while " +
        op_type_name(entry.request.op) + " '" + entry.request.name + "' was in flight"));
  }
  comm_->remove_process_set(id);
  if (std::optional<TensorEntry> entry = queue_.take(removed.name)) entry->handle->complete_member(Status::OK());
}

void Runtime::fail_process_set(const Response& failed) {
  const int32_t id = failed.set_id;
  const std::string failure = process_sets_.fail(id, ProcessSetFailure{failed.failing_rank(), failed.error_message});
  if (!failure.empty()) {
    CHORUS_LOG(kDebug, failure);
    for (TensorEntry& entry : queue_.take_set(id)) {
      entry.handle->complete_member(Status::Aborted(std::string(op_type_name(entry.request.op)) + " " +
                                                    tensor_label(id, entry.request.name) + ": " + failure));
    }
  }
  if (failed.failing_rank() != topology().rank) return;
  if (std::optional<TensorEntry> entry = queue_.take(failed.name)) entry->handle->complete_member(Status::OK());
}

void Runtime::count_barrier(const Response& barrier) {
  const std::string prefix = "chorus.barrier.";
  if (barrier.process_set != 0 || barrier.name.compare(0, prefix.size(), prefix) != 0) return;
  uint64_t number = 0;
  try {
    number = std::stoull(barrier.name.substr(prefix.size()));
  } catch (const std::exception&) {
    return;  // not a name next_barrier_name() gave
  }
  uint64_t count = barrier_count_.load();
  while (count <= number && !barrier_count_.compare_exchange_weak(count, number + 1)) {
  }
}

Status Runtime::control_timeline(const Response& response) {
  const bool start = response.type == Response::Type::kStartTimeline;
  // Rank 0 writes the timeline, so it decides; the others learn the outcome
  // here (a code byte, then the message), all at this point of the order.
  std::string outcome;
  if (topology().rank == 0) {
    const Status status = start ? start_timeline(response) : stop_timeline();
    outcome.push_back(static_cast<char>(status.code()));
    outcome += status.message();
  }
  CHORUS_RETURN_IF_ERROR(comm_->controller_transport()->broadcast_from_coordinator(&outcome));
  if (outcome.empty() || static_cast<uint8_t>(outcome[0]) > static_cast<uint8_t>(StatusCode::kInProgress)) {
    return Status::Internal("corrupt timeline control outcome from rank 0");
  }
  const Status status(static_cast<StatusCode>(outcome[0]), outcome.substr(1));
  if (status.ok()) mark_cycles_ = start && response.mark_cycles();
  if (std::optional<TensorEntry> entry = queue_.take(response.name)) entry->handle->complete_member(status);
  return Status::OK();
}

Status Runtime::start_timeline(const Response& response) {
  if (timeline_.enabled()) {
    return Status::PreconditionFailed("start_timeline('" + response.timeline_path() +
                                      "'): a timeline is already being written to '" + timeline_.path() +
                                      "' (by CHORUS_TIMELINE or an earlier start_timeline()); call "
                                      "stop_timeline() first");
  }
  return timeline_.open(response.timeline_path(), "start_timeline (rank 0 writes the timeline)");
}

Status Runtime::stop_timeline() {
  if (!timeline_.enabled()) {
    return Status::PreconditionFailed(
        "stop_timeline(): no timeline is being written; start one with start_timeline() or CHORUS_TIMELINE");
  }
  timeline_.close();
  return Status::OK();
}

void Runtime::stop_for(const Response& shutdown) {
  const int me = topology().rank;
  const int who = shutdown.shutdown_rank;
  if (who < 0) {  // the coordinator stopped the job (stall)
    CHORUS_LOG(kError, shutdown.error_message);
    peers_lost_ = "Chorus stopped: " + shutdown.error_message;
    // Device collectives waiting for the missing ranks would never finish:
    // end them now, so that shutdown() does not wait for them.
    comm_->backends().abort_all(peers_lost_);
    const Status failed = Status::Shutdown(shutdown.error_message);
    close_point_to_point([&](const TransferInfo& info) {
      return Status::Shutdown("Chorus has stopped (" + shutdown.error_message + ") while a " + describe(info) +
                              " was pending");
    });
    fail_pending(Status::Shutdown("Chorus has stopped: " + shutdown.error_message),
                 [&](const TensorEntry&) { return failed; });
    return;
  }
  close_point_to_point([&](const TransferInfo& info) {
    return who == me ? Status::Shutdown("Chorus has been shut down on rank " + std::to_string(me) + " while a " +
                                        describe(info) + " was pending")
                     : Status::Shutdown("Rank " + std::to_string(who) + " shut down while a " + describe(info) +
                                        " was pending on rank " + std::to_string(me));
  });
  const Status closed = who == me ? Status::Shutdown("Chorus has been shut down")
                                  : Status::Shutdown("Chorus has stopped: rank " + std::to_string(who) +
                                                     " shut down");
  fail_pending(closed, [&](const TensorEntry& entry) {
    return Status::Shutdown("Rank " + std::to_string(who) + " shut down while " +
                            op_type_name(entry.request.op) + " '" + entry.request.name + "' was pending");
  });
}

void Runtime::peer_lost(const Status& why) {
  const Status status = Status::Aborted("Chorus stopped: " + why.message());
  comm_->backends().abort_all(status.message());
  // The collective running now may never end: its handles fail at once.
  executor_.abandon_running(status);
  for (TensorEntry& entry : queue_.close(status)) {
    entry.handle->abandon(Status::Aborted("Chorus stopped while " + std::string(op_type_name(entry.request.op)) +
                                          " '" + entry.request.name + "' was pending: " + why.message()));
  }
  comm_->trigger()->wake_signal()->notify();
  close_point_to_point([&](const TransferInfo& info) {
    return Status::Aborted("Chorus stopped while a " + describe(info) + " was pending: " + why.message());
  });
}

void Runtime::end_if_peer_lost() {
  if (!heartbeat_ || !heartbeat_->lost()) return;
  comm_->abort_job(heartbeat_->lost_reason().message() +
                   "; ending the job here, since finalizing MPI would wait for the lost rank");
}

void Runtime::close_point_to_point(const PointToPoint::ErrorFor& why) { comm_->point_to_point()->close(why); }

void Runtime::fail_pending(const Status& closed, const std::function<Status(const TensorEntry&)>& error_for) {
  close_point_to_point([&](const TransferInfo& info) {
    return Status(closed.code(), closed.message() + " (while a " + describe(info) + " was pending)");
  });
  for (TensorEntry& entry : queue_.close(closed)) entry.handle->complete_member(error_for(entry));
}

}  // namespace chorus
