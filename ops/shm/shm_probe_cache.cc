#include "ops/shm/shm_probe_cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "chorus/atomic_file.h"
#include "chorus/checked_file.h"

namespace chorus {
namespace {

const CheckedFileFormat kFormat{"CHORUS-SHM-PROBE 1", "Chorus shared-memory probe cache"};
const char kKind[] = "shared-memory probe cache";

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

// Creates `path` and its parents (mode 0700, a per-user cache).
Status make_folders(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::Internal("cannot create the folder '" + prefix + "': " + std::strerror(errno));
    }
  }
  return Status::OK();
}

}  // namespace

std::string shm_probe_cache_key(int ranks, int64_t chunk_bytes) {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "unknown");
  return "host=" + std::string(host) + ";cpu=" + cpu_model() + ";cpus=" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
         ";ranks=" + std::to_string(ranks) + ";chunk=" + std::to_string(chunk_bytes) + ";probe=3";
}

std::string shm_probe_cache_folder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::string(xdg) + "/chorus";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    return std::string(home) + "/.cache/chorus";
  }
  return "";
}

std::string shm_probe_cache_path(const std::string& key) {
  const std::string folder = shm_probe_cache_folder();
  if (folder.empty()) return "";
  char name[64];
  std::snprintf(name, sizeof(name), "/shm-probe-%016llx", static_cast<unsigned long long>(checksum64(key)));
  return folder + name;
}

bool load_shm_probe(const std::string& path, const std::string& key, ShmProbeChoice* out, std::string* warning) {
  warning->clear();
  if (path.empty() || access(path.c_str(), F_OK) != 0) return false;
  std::string payload;
  try {
    payload = read_checked_file(path, kFormat, kKind);
  } catch (const std::exception& e) {
    *warning = e.what();
    return false;
  }
  const std::string first = "key " + key + "\n";
  if (payload.compare(0, first.size(), first) != 0) {
    *warning = "Shared-memory probe cache '" + path + "' is foreign: it was measured for '" +
               payload.substr(4, payload.find('\n') == std::string::npos ? std::string::npos : payload.find('\n') - 4) +
               "', expected '" + key + "'";
    return false;
  }
  if (!ShmProbeChoice::parse(payload.substr(first.size()), out)) {
    *warning = "Shared-memory probe cache '" + path + "' is malformed: expected lines 'sample <bytes> <mpi us> "
               "<plain us> <streaming us>' with positive times, by ascending size";
    return false;
  }
  return true;
}

std::vector<std::string> describe_shm_probe_cache() {
  std::vector<std::string> lines;
  const std::string folder = shm_probe_cache_folder();
  DIR* dir = folder.empty() ? nullptr : opendir(folder.c_str());
  if (dir == nullptr) return lines;
  std::vector<std::string> paths;
  while (const dirent* entry = readdir(dir)) {
    if (std::strncmp(entry->d_name, "shm-probe-", 10) == 0) paths.push_back(folder + "/" + entry->d_name);
  }
  closedir(dir);
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    try {
      const std::string payload = read_checked_file(path, kFormat, kKind);
      const size_t end = payload.find('\n');
      ShmProbeChoice choice;
      if (payload.rfind("key ", 0) != 0 || end == std::string::npos ||
          !ShmProbeChoice::parse(payload.substr(end + 1), &choice)) {
        lines.push_back(path + ": malformed, measured again by the next job");
        continue;
      }
      lines.push_back(payload.substr(4, end - 4) + ": " + choice.describe());
    } catch (const std::exception& e) {
      lines.push_back(std::string(e.what()) + "; measured again by the next job");
    }
  }
  return lines;
}

Status store_shm_probe(const std::string& path, const std::string& key, const ShmProbeChoice& choice) {
  if (path.empty()) return Status::InvalidArgument("no cache folder: neither XDG_CACHE_HOME nor HOME is set");
  CHORUS_RETURN_IF_ERROR(make_folders(path.substr(0, path.rfind('/'))));
  try {
    write_checked_file(path, kFormat, "key " + key + "\n" + choice.serialize(), kKind);
  } catch (const std::exception& e) {
    return Status::Internal(e.what());
  }
  return Status::OK();
}

}  // namespace chorus
