#include "chorus/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "chorus/status.h"

namespace chorus {
namespace {

[[noreturn]] void fail(const std::string& message) {
  throw Error(Status::InvalidArgument(message));
}

std::string parent_directory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all of `bytes` to `fd`; false with errno set on failure.
bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& kind) {
  const std::string cannot = "Cannot write " + kind + " '" + path + "': ";
  if (path.empty() || path.back() == '/') fail(cannot + "expected a file path, not a folder");
  std::string temporary = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    fail(cannot + "creating a temporary file in " + parent_directory(path) +
         " failed: " + std::strerror(errno));
  }
  auto give_up = [&](const std::string& step) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    ::unlink(temporary.c_str());
    fail(cannot + step + " failed: " + reason + " (the previous " + kind + ", if any, is unchanged)");
  };
  if (::fchmod(fd, 0644) != 0) give_up("fchmod");
  if (!write_all(fd, bytes)) give_up("writing " + std::to_string(bytes.size()) + " bytes");
  if (::fsync(fd) != 0) give_up("fsync");
  if (::close(fd) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    fail(cannot + "close failed: " + reason + " (the previous " + kind + ", if any, is unchanged)");
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    fail(cannot + "renaming the temporary file failed: " + reason + " (the previous " + kind +
         ", if any, is unchanged)");
  }
  // The rename is durable only once the directory entry is on disk.
  const int dir = ::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string read_whole_file(const std::string& path, const std::string& kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("Cannot open " + kind + " '" + path + "': " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail("Cannot read " + kind + " '" + path + "': " + std::strerror(errno));
  return bytes;
}

}  // namespace chorus
