#include "running/job_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "process/process_util.h"

namespace chorus::launcher {
namespace {

class JobWatch {
 public:
  JobWatch(const RunSettings& settings, ReportListener* listener, int signal_fd)
      : settings_(settings), listener_(listener), signal_fd_(signal_fd) {
    record_.np = settings.np;
    record_.launcher = settings.launcher_name;
    events_.on_message = [this](const ReportMessage& m) { on_message(m); };
    events_.on_closed = [this](int rank) { on_closed(rank); };
  }

  JobOutcome run(const Command& command) {
    std::string error;
    SpawnOptions options;
    // If chorusrun itself is killed, mpirun/srun is told to end the job.
    options.parent_death_signal = SIGTERM;
    pid_ = spawn_process(command, options, &error);
    if (pid_ < 0) {
      return {127, "chorusrun: cannot run '" + command.argv.front() + "': " + error};
    }
    const double started = monotonic_seconds();
    if (settings_.start_timeout_seconds > 0) start_deadline_ = started + settings_.start_timeout_seconds;
    if (settings_.hosts_changed) next_poll_ = started + settings_.poll_seconds;
    while (!finished()) step();
    listener_->drain(settings_.token, events_);
    return decide_outcome(record_);
  }

  const JobRecord& record() const { return record_; }

 private:
  bool finished() const {
    if (!launcher_done_) return false;
    // Ranks reported lost may never close their connection (their host
    // froze): nothing more is coming from them.
    return listener_->open_connections() == 0 || listener_->only_ranks_open(reported_lost_) ||
           monotonic_seconds() >= drain_deadline_;
  }

  void step() {
    std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
    listener_->add_poll_fds(&fds);
    double deadline = launcher_done_ ? drain_deadline_ : -1.0;
    if (!launcher_done_ && kill_deadline_ > 0) deadline = kill_deadline_;
    if (!launcher_done_ && !stopping_ && start_deadline_ > 0) deadline = start_deadline_;
    if (!launcher_done_ && next_poll_ > 0 && (deadline < 0 || next_poll_ < deadline)) deadline = next_poll_;
    if (!launcher_done_ && !stopping_ && lost_deadline_ > 0 && (deadline < 0 || lost_deadline_ < deadline)) {
      deadline = lost_deadline_;
    }
    const int ready = poll(fds.data(), fds.size(), poll_timeout_ms(deadline));
    if (ready < 0 && errno != EINTR) return;
    if (ready > 0) {
      listener_->handle(fds, settings_.token, events_);
      if (fds[0].revents != 0) {
        while (const int s = read_signal(signal_fd_)) on_signal(s);
      }
    }
    check_deadlines();
  }

  void on_message(const ReportMessage& m) {
    switch (m.kind) {
      case ReportMessage::Kind::kHello:
        record_.started.insert(m.rank);
        hosts_[m.rank] = m.host;
        record_.hosts[m.rank] = m.host;
        // A wrapper that starts after the notice still needs it.
        if (notified_) listener_->send_to_ranks(format_hosts_changed(settings_.token));
        break;
      case ReportMessage::Kind::kInit:
        record_.initialized.insert(m.rank);
        break;
      case ReportMessage::Kind::kLost:
        record_.lost_reports.push_back(m.lost);
        reported_lost_.insert(m.lost.rank);
        if (lost_deadline_ < 0) lost_deadline_ = monotonic_seconds() + settings_.lost_launcher_grace_seconds;
        break;
      case ReportMessage::Kind::kExit: {
        RankExit exit = m.exit;
        exit.host = hosts_[m.rank];
        record_.exits.push_back(exit);
        exited_.insert(m.rank);
        break;
      }
    }
  }

  void on_closed(int rank) {
    if (rank >= 0 && !exited_.count(rank)) record_.lost.insert(rank);
  }

  void on_signal(int s) {
    if (s == SIGCHLD) {
      int status = 0;
      if (!launcher_done_ && waitpid(pid_, &status, WNOHANG) == pid_) {
        launcher_done_ = true;
        record_.launcher_signaled = WIFSIGNALED(status);
        record_.launcher_status = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
        drain_deadline_ = monotonic_seconds() + settings_.drain_seconds;
      }
      return;
    }
    if (!record_.stopped_by_signal && !record_.start_timeout_seconds) record_.stopped_by_signal = s;
    stop();
  }

  void check_deadlines() {
    const double now = monotonic_seconds();
    if (next_poll_ > 0 && now >= next_poll_) {
      next_poll_ = -1.0;
      if (!launcher_done_ && !stopping_ && settings_.hosts_changed()) {
        notified_ = true;
        listener_->send_to_ranks(format_hosts_changed(settings_.token));
      } else if (!launcher_done_) {
        next_poll_ = monotonic_seconds() + settings_.poll_seconds;
      }
    }
    if (start_deadline_ > 0 && now >= start_deadline_) {
      start_deadline_ = -1.0;
      if (!launcher_done_ && !stopping_ && static_cast<int>(record_.initialized.size()) < settings_.np) {
        record_.start_timeout_seconds = settings_.start_timeout_seconds;
        stop();
      }
    }
    if (lost_deadline_ > 0 && now >= lost_deadline_) {
      // The job was aborted for a lost rank and the launcher still waits
      // (for a frozen host's daemon): end it. Not a stop by chorusrun's
      // caller, so the attempt is still judged by what the ranks reported.
      lost_deadline_ = -1.0;
      stop(settings_.lost_kill_grace_seconds);
    }
    if (!launcher_done_ && kill_deadline_ > 0 && now >= kill_deadline_) {
      kill(pid_, SIGKILL);
      kill_deadline_ = -1.0;
    }
  }

  // SIGTERM to mpirun/srun ends every rank through their wrappers; SIGKILL
  // after the grace period, which the wrappers notice (parent-death signal).
  void stop(double grace_seconds = -1.0) {
    if (stopping_ || launcher_done_) return;
    stopping_ = true;
    kill(pid_, SIGTERM);
    kill_deadline_ = monotonic_seconds() + (grace_seconds >= 0 ? grace_seconds : settings_.kill_grace_seconds);
  }

  const RunSettings& settings_;
  ReportListener* listener_;
  int signal_fd_;
  ReportListener::Events events_;
  JobRecord record_;
  std::map<int, std::string> hosts_;
  std::set<int> exited_;
  std::set<int> reported_lost_;  // named in a `lost` report
  pid_t pid_ = -1;
  bool launcher_done_ = false;
  bool stopping_ = false;
  double start_deadline_ = -1.0;
  double kill_deadline_ = -1.0;
  double drain_deadline_ = -1.0;
  double next_poll_ = -1.0;  // next hosts_changed() call; -1: none
  double lost_deadline_ = -1.0;  // the launcher must have ended by then (a rank was lost)
  bool notified_ = false;
};

}  // namespace

JobOutcome run_job(const Command& command, const RunSettings& settings, ReportListener* listener, int signal_fd,
                   JobRecord* record) {
  JobWatch watch(settings, listener, signal_fd);
  const JobOutcome outcome = watch.run(command);
  if (record != nullptr) *record = watch.record();
  return outcome;
}

}  // namespace chorus::launcher
