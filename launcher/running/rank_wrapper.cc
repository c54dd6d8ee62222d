#include "running/rank_wrapper.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "base/launcher_rendezvous.h"
#include "chorus/elastic.h"
#include "plan/local_host.h"
#include "process/process_util.h"
#include "reports/report_protocol.h"
#include "running/line_prefixer.h"

namespace chorus::launcher {
namespace {

constexpr int kConnectTimeoutMs = 10000;
// SIGTERM first so programs can clean up; SIGKILL if they take longer.
constexpr double kStopGraceSeconds = 3.0;
// Output still in the pipes after the program ended (its children may hold
// them open; they are killed, but give the kernel a moment).
constexpr double kOutputDrainSeconds = 1.0;
// Exit status when the wrapper itself cannot do its job.
constexpr int kWrapperFailure = 125;

struct OutputPipe {
  int read_fd = -1;
  int target_fd = -1;
  LinePrefixer prefixer;
};

class RankWrapper {
 public:
  RankWrapper(int rank, std::string endpoint, std::string token, bool tag, std::vector<std::string> program)
      : rank_(rank), endpoint_(std::move(endpoint)), token_(std::move(token)), tag_(tag),
        program_(std::move(program)) {}

  int run() {
    parent_ = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent_) return kWrapperFailure;  // mpirun is already gone
    signal_fd_ = open_supervisor_signalfd();
    std::string host, error;
    int port = 0;
    if (!split_launcher_address(endpoint_, &host, &port)) return fail("bad report address '" + endpoint_ + "'");
    socket_ = connect_with_timeout(host, port, kConnectTimeoutMs, &error);
    if (socket_ < 0) {
      return fail("cannot reach chorusrun at " + endpoint_ + " (" + error +
                  "); if this host cannot reach that address, give chorusrun --report-address");
    }
    if (!start_program()) return report_and_exit(false, 127);
    write_all(socket_, format_hello(token_, rank_, static_cast<long>(pid_), host_name()));
    while (!done()) step();
    return report_and_exit(WIFSIGNALED(status_), WIFSIGNALED(status_) ? WTERMSIG(status_) : WEXITSTATUS(status_));
  }

 private:
  // The host named in the hello: chorusrun --elastic under srun leaves a
  // failed rank's host out by this name (srun --exclude), so under Slurm it
  // is the node name.
  static std::string host_name() { return elastic_host_name(this_host_name(), std::getenv("SLURMD_NODENAME")); }

  int fail(const std::string& why) {
    std::cerr << "chorusrun: rank " << rank_ << ": " << why << std::endl;
    return kWrapperFailure;
  }

  bool start_program() {
    Command command;
    command.argv = program_;
    command.environment = {{kLauncherAddressVariable, endpoint_},
                           {kLauncherTokenVariable, token_},
                           {kLauncherRankVariable, std::to_string(rank_)}};
    // An elastic job's ranks look for chorusrun's notice in a file of this
    // host (a rank cannot be reached otherwise without a runtime protocol).
    if (std::getenv(kElasticJobVariable) != nullptr) {
      const char* tmp = std::getenv("TMPDIR");
      notice_path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/chorus-elastic-notice-" + token_ +
                     "-" + std::to_string(rank_);
      unlink(notice_path_.c_str());
      command.environment.emplace_back(kElasticNoticeVariable, notice_path_);
    }
    SpawnOptions options;
    options.own_process_group = true;
    options.parent_death_signal = SIGKILL;  // if this wrapper is SIGKILLed
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    if (tag_ && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) {
      fail(std::string("pipe: ") + std::strerror(errno));
      return false;
    }
    if (tag_) {
      options.stdout_fd = out[1];
      options.stderr_fd = err[1];
    }
    std::string error;
    started_ = monotonic_seconds();
    pid_ = spawn_process(command, options, &error);
    if (tag_) {
      close(out[1]);
      close(err[1]);
      const std::string prefix = "[" + std::to_string(rank_) + "] ";
      pipes_.push_back({out[0], STDOUT_FILENO, LinePrefixer(prefix)});
      pipes_.push_back({err[0], STDERR_FILENO, LinePrefixer(prefix)});
    }
    if (pid_ < 0) {
      write_all(socket_, format_hello(token_, rank_, 0, host_name()));
      fail("cannot run '" + program_.front() + "': " + error);
      return false;
    }
    return true;
  }

  bool done() const {
    if (!reaped_) return false;
    return pipes_.empty() || monotonic_seconds() >= drain_deadline_;
  }

  void step() {
    std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
    if (socket_ >= 0 && !launcher_gone_) fds.push_back({socket_, POLLIN, 0});
    for (const OutputPipe& p : pipes_) fds.push_back({p.read_fd, POLLIN, 0});
    const double deadline = reaped_ ? drain_deadline_ : kill_deadline_;
    if (poll(fds.data(), fds.size(), poll_timeout_ms(deadline)) < 0 && errno != EINTR) return;
    for (const pollfd& p : fds) {
      if (p.revents == 0) continue;
      if (p.fd == signal_fd_) {
        while (const int s = read_signal(signal_fd_)) {
          if (s == SIGCHLD) continue;
          // Told to stop, or the parent-death signal (report_and_exit tells
          // the two apart).
          stop();
        }
      } else if (p.fd == socket_) {
        char buffer[256];
        const ssize_t n = read(socket_, buffer, sizeof(buffer));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
          launcher_gone_ = true;  // chorusrun ended: nobody is left to watch this rank
          stop();
        } else if (n > 0) {
          from_launcher(std::string(buffer, static_cast<size_t>(n)));
        }
      } else {
        forward_output(p.fd);
      }
    }
    check_child();
    if (!reaped_ && kill_deadline_ > 0 && monotonic_seconds() >= kill_deadline_) {
      kill(-pid_, SIGKILL);
      kill_deadline_ = -1.0;
    }
  }

  // Lines from chorusrun: only the elastic hosts-changed notice.
  void from_launcher(const std::string& bytes) {
    launcher_buffer_ += bytes;
    size_t newline;
    while ((newline = launcher_buffer_.find('\n')) != std::string::npos) {
      const std::string line = launcher_buffer_.substr(0, newline);
      launcher_buffer_.erase(0, newline + 1);
      if (is_hosts_changed(line, token_) && !notice_path_.empty()) {
        const int fd = open(notice_path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) close(fd);
      }
    }
    if (launcher_buffer_.size() > 4096) launcher_buffer_.clear();
  }

  void forward_output(int fd) {
    for (size_t i = 0; i < pipes_.size(); ++i) {
      OutputPipe& p = pipes_[i];
      if (p.read_fd != fd) continue;
      char buffer[65536];
      const ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n > 0) {
        write_all(p.target_fd, p.prefixer.feed(std::string(buffer, static_cast<size_t>(n))));
      } else if (n == 0 || errno != EINTR) {
        write_all(p.target_fd, p.prefixer.flush());
        close(p.read_fd);
        pipes_.erase(pipes_.begin() + static_cast<long>(i));
      }
      return;
    }
  }

  // The program's exit is seen without reaping it first (WNOWAIT), so its
  // process group id cannot be reused while what is left of the group is
  // killed: a program's own children must not outlive it.
  void check_child() {
    if (reaped_) return;
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    kill(-pid_, SIGKILL);
    while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    ended_ = monotonic_seconds();
    drain_deadline_ = ended_ + kOutputDrainSeconds;
  }

  void stop() {
    if (stopped_ || reaped_) return;
    stopped_ = true;
    kill(-pid_, SIGTERM);
    kill_deadline_ = monotonic_seconds() + kStopGraceSeconds;
  }

  int report_and_exit(bool signaled, int value) {
    for (OutputPipe& p : pipes_) {
      write_all(p.target_fd, p.prefixer.flush());
      close(p.read_fd);
    }
    pipes_.clear();
    // A stop whose parent (this host's slurmstepd or orted) is gone by now
    // was its death: the host is being lost, which chorusrun --elastic must
    // tell apart from being told to stop. Looked at here, not when the
    // signal came: PR_SET_PDEATHSIG fires when the parent's thread that
    // forked this wrapper exits, which in a parent being killed can be
    // before getppid() changes.
    if (stopped_ && getppid() != parent_) orphaned_ = true;
    RankExit exit;
    exit.rank = rank_;
    exit.signaled = signaled;
    exit.value = value;
    exit.seconds = (reaped_ ? ended_ : monotonic_seconds()) - started_;
    exit.stopped = stopped_ && !orphaned_;
    exit.orphaned = orphaned_;
    write_all(socket_, format_exit(token_, exit));
    close(socket_);
    if (!notice_path_.empty()) unlink(notice_path_.c_str());
    return signaled ? 128 + value : value;
  }

  int rank_;
  std::string endpoint_, token_;
  bool tag_;
  std::vector<std::string> program_;
  int signal_fd_ = -1;
  int socket_ = -1;
  bool launcher_gone_ = false;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  bool stopped_ = false;
  bool orphaned_ = false;  // stopped because the parent (launcher daemon) died
  pid_t parent_ = 0;
  double started_ = 0.0, ended_ = 0.0;
  double kill_deadline_ = -1.0;
  double drain_deadline_ = -1.0;
  std::vector<OutputPipe> pipes_;
  std::string notice_path_;     // CHORUS_ELASTIC_NOTICE, elastic jobs only
  std::string launcher_buffer_;  // a partial line from chorusrun
};

}  // namespace

int rank_from_environment() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"}) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    int rank = -1;
    const auto result = std::from_chars(text, text + std::strlen(text), rank);
    if (result.ec == std::errc() && *result.ptr == '\0' && rank >= 0) return rank;
  }
  return -1;
}

int rank_wrapper_main(const std::vector<std::string>& args) {
  if (args.size() < 5 || (args[2] != "--tag" && args[2] != "--no-tag") || args[3] != "--") {
    std::cerr << "chorusrun: " << kRankWrapperFlag
              << " is chorusrun's internal per-rank mode: expected HOST:PORT TOKEN --tag|--no-tag -- PROGRAM [ARGS...]"
              << std::endl;
    return 2;
  }
  const int rank = rank_from_environment();
  if (rank < 0) {
    std::cerr << "chorusrun: " << kRankWrapperFlag
              << " must be started by mpirun or srun (none of OMPI_COMM_WORLD_RANK, PMIX_RANK, SLURM_PROCID holds a rank)"
              << std::endl;
    return 2;
  }
  RankWrapper wrapper(rank, args[0], args[1], args[2] == "--tag",
                      std::vector<std::string>(args.begin() + 4, args.end()));
  return wrapper.run();
}

}  // namespace chorus::launcher
