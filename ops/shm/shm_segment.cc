#include "ops/shm/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ops/process_liveness.h"

namespace chorus {
namespace {

std::string errno_text(int error) { return std::string(std::strerror(error)); }

Status system_error(const std::string& what, const std::string& name, int error) {
  return Status::Internal(what + " of shared-memory segment '" + name + "' failed: " + errno_text(error));
}

Status map(int fd, const std::string& name, size_t bytes, void** out) {
  // MAP_POPULATE faults every page in now: first touch of fresh memory is
  // slow on these machines, and it would otherwise land in the first
  // collective.
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (data == MAP_FAILED) return system_error("mmap", name, errno);
  *out = data;
  return Status::OK();
}

}  // namespace

Status ShmSegment::create(const std::string& name, size_t bytes, std::unique_ptr<ShmSegment>* out) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return system_error("shm_open (create)", name, errno);
  // posix_fallocate reserves the pages: with only ftruncate, a full /dev/shm
  // would surface as SIGBUS on first touch.
  const int error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  void* data = nullptr;
  Status status = error == 0 ? map(fd, name, bytes, &data) : system_error("posix_fallocate", name, error);
  close(fd);
  if (!status.ok()) {
    shm_unlink(name.c_str());
    return status;
  }
  out->reset(new ShmSegment(data, bytes));
  return Status::OK();
}

Status ShmSegment::open(const std::string& name, size_t bytes, std::unique_ptr<ShmSegment>* out) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) return system_error("shm_open", name, errno);
  struct stat info;
  if (fstat(fd, &info) != 0) {
    const int error = errno;
    close(fd);
    return system_error("fstat", name, error);
  }
  if (static_cast<size_t>(info.st_size) != bytes) {
    close(fd);
    return Status::Internal("shared-memory segment '" + name + "' is " + std::to_string(info.st_size) +
                            " bytes, expected " + std::to_string(bytes));
  }
  void* data = nullptr;
  const Status status = map(fd, name, bytes, &data);
  close(fd);
  CHORUS_RETURN_IF_ERROR(status);
  out->reset(new ShmSegment(data, bytes));
  return Status::OK();
}

Status ShmSegment::unlink(const std::string& name) {
  if (shm_unlink(name.c_str()) != 0) return system_error("shm_unlink", name, errno);
  return Status::OK();
}

ShmSegment::~ShmSegment() { munmap(data_, size_); }

std::string make_segment_name(const std::string& tag) {
  std::random_device device;
  const uint64_t random = (static_cast<uint64_t>(device()) << 32) ^ device();
  char suffix[17];
  std::snprintf(suffix, sizeof(suffix), "%016llx", static_cast<unsigned long long>(random));
  return "/" + std::string(kShmSegmentPrefix) + std::to_string(getpid()) + "." + suffix +
         (tag.empty() ? "" : "." + tag);
}

int remove_stale_segments(const std::string& directory) {
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return 0;
  const std::string prefix = kShmSegmentPrefix;
  int removed = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::string file = entry->d_name;
    if (file.compare(0, prefix.size(), prefix) != 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(file.c_str() + prefix.size(), &end, 10);
    if (end == nullptr || *end != '.' || process_alive(static_cast<pid_t>(pid))) continue;
    if (shm_unlink(("/" + file).c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

}  // namespace chorus
