#include "process/process_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include "process/environment.h"

namespace chorus::launcher {
namespace {

sigset_t supervised_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  return set;
}

}  // namespace

pid_t spawn_process(const Command& command, const SpawnOptions& options, std::string* error) {
  if (command.argv.empty()) {
    *error = "empty command";
    return -1;
  }
  // Everything the child needs is built before fork(): after it, only
  // async-signal-safe calls.
  std::map<std::string, std::string> variables = Environment::current().variables();
  for (const auto& [name, value] : command.environment) variables[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : variables) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command.argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close(report[0]);
    close(report[1]);
    return -1;
  }
  if (pid == 0) {
    close(report[0]);
    if (options.own_process_group) setpgid(0, 0);
    if (options.parent_death_signal != 0) {
      prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
      if (getppid() != parent) _exit(1);  // the parent already died
    }
    if (options.stdout_fd >= 0) dup2(options.stdout_fd, STDOUT_FILENO);
    if (options.stderr_fd >= 0) dup2(options.stderr_fd, STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    const int code = errno;
    (void)!write(report[1], &code, sizeof(code));
    _exit(127);
  }
  close(report[1]);
  if (options.own_process_group) setpgid(pid, pid);  // also here: no race with kill(-pid)
  int code = 0;
  ssize_t n;
  do {
    n = read(report[0], &code, sizeof(code));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(code))) {
    waitpid(pid, nullptr, 0);
    *error = std::strerror(code);
    return -1;
  }
  return pid;
}

bool capture_output(const std::vector<std::string>& argv, CapturedOutput* result, std::string* error) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  Command command;
  command.argv = argv;
  SpawnOptions options;
  options.stdout_fd = out[1];
  options.stderr_fd = out[1];
  const pid_t pid = spawn_process(command, options, error);
  close(out[1]);
  if (pid < 0) {
    close(out[0]);
    return false;
  }
  char buffer[4096];
  ssize_t n;
  while ((n = read(out[0], buffer, sizeof(buffer))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result->output.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  while (waitpid(pid, &result->status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

int open_supervisor_signalfd() {
  const sigset_t set = supervised_signals();
  sigprocmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int read_signal(int signal_fd) {
  signalfd_siginfo info;
  const ssize_t n = read(signal_fd, &info, sizeof(info));
  return n == static_cast<ssize_t>(sizeof(info)) ? static_cast<int>(info.ssi_signo) : 0;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int poll_timeout_ms(double deadline, int cap_ms) {
  if (deadline < 0) return cap_ms;
  const double ms = (deadline - monotonic_seconds()) * 1000.0;
  if (ms <= 0) return 0;
  return ms > cap_ms ? cap_ms : static_cast<int>(ms) + 1;
}

}  // namespace chorus::launcher
