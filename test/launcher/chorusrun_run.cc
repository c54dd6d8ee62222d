#include "chorusrun_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace chorus::launcher::testing {
namespace {

constexpr const char* kMarkerName = "CHORUS_LAUNCHER_TEST_MARKER";

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> processes_with(const std::string& marker) {
  std::vector<std::string> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string environ = read_file("/proc/" + name + "/environ");
    if (environ.find(marker) == std::string::npos) continue;
    std::string cmdline = read_file("/proc/" + name + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    found.push_back(name + ": " + cmdline);
  }
  closedir(proc);
  return found;
}

}  // namespace

int RunResult::exit_code() const { return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1; }

RunResult run_chorusrun(const std::string& chorusrun, const RunRequest& request) {
  std::random_device device;
  const std::string marker = std::string(kMarkerName) + "=" + std::to_string(device()) + std::to_string(device());
  int out[2];
  RunResult result;
  if (pipe2(out, O_CLOEXEC) != 0) return result;
  std::vector<std::string> args = {chorusrun};
  args.insert(args.end(), request.args.begin(), request.args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string marker_entry = marker;
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    putenv(marker_entry.data());
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out[1]);
  const double deadline = now() + request.deadline_seconds;
  bool signaled = false;
  while (true) {
    if (!signaled && request.signal_when && request.signal_when()) {
      result.alive_at_signal = processes_with(marker).size();
      kill(request.signal_process_group ? -pid : pid, request.signal);
      signaled = true;
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = poll(&p, 1, 100);
    if (ready > 0) {
      char buffer[4096];
      const ssize_t n = read(out[0], buffer, sizeof(buffer));
      if (n == 0) break;
      if (n > 0) result.output.append(buffer, static_cast<size_t>(n));
    }
    if (now() > deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
  }
  close(out[0]);
  waitpid(pid, &result.wait_status, 0);
  // Whatever the job left must be gone by the time chorusrun has exited;
  // a short grace covers processes the kernel is still tearing down.
  const double settle = now() + 5.0;
  do {
    result.leftovers = processes_with(marker);
    if (result.leftovers.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (now() < settle);
  return result;
}

std::vector<std::string> lines_starting_with(const std::string& output, const std::string& prefix) {
  std::vector<std::string> lines;
  std::stringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  }
  return lines;
}

std::string last_line(const std::string& output) {
  std::string trimmed = output;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const size_t newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

}  // namespace chorus::launcher::testing
