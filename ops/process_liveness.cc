#include "ops/process_liveness.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

namespace chorus {

namespace {

// /proc/<pid>/stat reads "pid (comm) S ..."; the fields from the state on
// follow the last ')' (comm may itself contain one). Empty when unreadable.
std::string stat_after_comm(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return "";
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return "";
  return line.substr(paren + 2);
}

}  // namespace

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // kill() succeeds on a zombie.
  const std::string fields = stat_after_comm(pid);
  if (fields.empty()) return true;  // no procfs: trust kill()
  return fields[0] != 'Z' && fields[0] != 'X';
}

std::optional<uint64_t> process_start_time(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::istringstream fields(stat_after_comm(pid));
  // The state is field 3 of stat(5); the start time is field 22.
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  uint64_t start = 0;
  if (!(fields >> start)) return std::nullopt;
  return start;
}

}  // namespace chorus
