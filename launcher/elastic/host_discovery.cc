#include "elastic/host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "options/usage_error.h"
#include "process/process_util.h"
#include "reports/report_protocol.h"

namespace chorus::launcher {
namespace {

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// The last lines of what a failing script printed, for its error message.
std::string tail_of(const std::string& output) {
  const std::string text = trim(output);
  if (text.empty()) return "";
  const size_t limit = 400;
  return ": " + (text.size() > limit ? "..." + text.substr(text.size() - limit) : text);
}

}  // namespace

std::vector<Host> parse_discovered_hosts(const std::string& output, const std::string& script) {
  std::vector<Host> hosts;
  std::stringstream stream(output);
  std::string raw;
  int line_number = 0;
  while (std::getline(stream, raw)) {
    ++line_number;
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::string origin = "host discovery script " + script + " line " + std::to_string(line_number) + " '" + line + "'";
    const std::string expected = ": expected 'host' or 'host:slots' (slots a positive integer), one host a line";
    Host host;
    host.origin = origin;
    const size_t colon = line.find(':');
    host.name = line.substr(0, colon);
    if (!is_valid_host_name(host.name)) throw UsageError(origin + expected);
    if (colon != std::string::npos && !parse_positive_int(line.substr(colon + 1), &host.slots)) {
      throw UsageError(origin + expected);
    }
    hosts.push_back(host);
  }
  check_no_duplicates(hosts);
  return hosts;
}

std::vector<Host> run_discovery_script(const std::string& script, double timeout_seconds) {
  const std::string what = "host discovery script " + script;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw UsageError(what + ": pipe: " + std::strerror(errno));
  Command command;
  command.argv = {script};
  SpawnOptions options;
  options.stdout_fd = out[1];
  options.own_process_group = true;  // a timeout kills what it started too
  std::string error;
  const pid_t pid = spawn_process(command, options, &error);
  close(out[1]);
  if (pid < 0) {
    close(out[0]);
    throw UsageError(what + " cannot be run: " + error + " (expected an executable file)");
  }
  std::string output;
  const double deadline = monotonic_seconds() + timeout_seconds;
  bool timed_out = false;
  while (true) {
    pollfd fd{out[0], POLLIN, 0};
    const int ready = poll(&fd, 1, poll_timeout_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && monotonic_seconds() >= deadline) {
      timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = read(out[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    std::ostringstream seconds;
    seconds << timeout_seconds;
    throw UsageError(what + " did not finish within " + seconds.str() + " s: expected it to print the hosts and exit");
  }
  if (WIFSIGNALED(status)) {
    throw UsageError(what + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                     signal_name(WTERMSIG(status)) + ")" + tail_of(output));
  }
  if (WEXITSTATUS(status) != 0) {
    throw UsageError(what + " failed with exit code " + std::to_string(WEXITSTATUS(status)) + tail_of(output) +
                     " (expected exit code 0 and 'host[:slots]' lines)");
  }
  return parse_discovered_hosts(output, script);
}

}  // namespace chorus::launcher
