// What the kernel counts for one thread of this process, found by its name
// (/proc/self/task/<tid>/comm): CPU time and context switches. Lets a test
// or a benchmark look at Chorus's background thread ("chorus-bg") alone,
// apart from the main thread and Open MPI's threads. Header-only, shared by
// the parallel tests and chorus_bench. Linux only.
#pragma once

#include <dirent.h>

#include <fstream>
#include <string>

namespace chorus_test {

// "/proc/self/task/<tid>" of the thread named `name`, or "" if there is none.
inline std::string thread_dir_named(const std::string& name) {
  const std::string tasks = "/proc/self/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return "";
  std::string found;
  while (dirent* entry = readdir(dir)) {
    const std::string path = tasks + "/" + entry->d_name;
    std::ifstream comm(path + "/comm");
    std::string line;
    if (std::getline(comm, line) && line == name) found = path;
  }
  closedir(dir);
  return found;
}

struct ThreadStats {
  bool ok = false;            // false when the thread's files could not be read
  long long cpu_ns = 0;       // time on a CPU (schedstat: nanoseconds, not clock ticks)
  long context_switches = 0;  // voluntary + involuntary: each is one time the thread ran
};

inline ThreadStats read_thread_stats(const std::string& thread_dir) {
  ThreadStats stats;
  std::ifstream schedstat(thread_dir + "/schedstat");
  if (!(schedstat >> stats.cpu_ns)) return stats;
  std::ifstream status(thread_dir + "/status");
  std::string line;
  while (std::getline(status, line)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && line.find("ctxt_switches") != std::string::npos) {
      stats.context_switches += std::stol(line.substr(colon + 1));
    }
  }
  stats.ok = true;
  return stats;
}

}  // namespace chorus_test
