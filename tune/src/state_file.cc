#include "chorus/tune/state_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "json_fields.h"

namespace chorus {
namespace tune {
namespace {

Status io_error(const std::string& path, const std::string& step) {
  return Status::Internal("saving the search state to '" + path + "': " + step + " failed: " + std::strerror(errno));
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(path, "creating '" + tmp + "'");
  const auto fail = [&](const std::string& step) {
    Status s = io_error(path, step);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return fail("writing '" + tmp + "'");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync of '" + tmp + "'");
  if (::close(fd) != 0) {
    Status s = io_error(path, "closing '" + tmp + "'");
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = io_error(path, "renaming '" + tmp + "' over it");
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself reaches the disk with the directory.
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::OK();
}

std::string state_file_text(const SearchLog& log) {
  // Indented, except the events: one compact line each (a long search has
  // thousands of them, and dump(1) would spread each over five lines). The
  // indented document is written with an empty events list, whose "[]" the
  // events' own dumps then fill.
  Json j = log.to_json();
  const Json events = std::move(j["events"]);
  j["events"] = Json::array();
  std::string text = j.dump(1);
  const std::string empty = "\"events\": []";
  const size_t at = text.rfind(empty);
  std::string lines = "\"events\": [";
  for (size_t i = 0; i < events.size(); ++i) lines += (i ? ",\n  " : "\n  ") + events[i].dump();
  lines += events.empty() ? "]" : "\n ]";
  text.replace(at, empty.size(), lines);
  return text + "\n";
}

Status save_state_file(const std::string& path, const SearchLog& log) {
  return write_file_atomically(path, state_file_text(log));
}

SearchLog load_state_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(Status::InvalidArgument("cannot read the search state file '" + path + "': " + std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return SearchLog::from_json(json_fields::parse(text.str()));
  } catch (const Error& e) {
    throw Error(Status(e.code(), "search state file '" + path + "' is not usable: " + e.what()));
  }
}

}  // namespace tune
}  // namespace chorus
