#include "ops/shm/process_liveness.h"

#include <signal.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace chorus {

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // kill() succeeds on a zombie. /proc/<pid>/stat reads "pid (comm) S ...";
  // the state letter follows the last ')' (comm may itself contain one).
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;  // no procfs: trust kill()
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return true;
  const char state = line[paren + 2];
  return state != 'Z' && state != 'X';
}

}  // namespace chorus
