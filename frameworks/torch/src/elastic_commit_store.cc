#include "elastic_commit_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace elastic {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMagic = "chorus-elastic-commit 1";
constexpr const char* kPrefix = "commit-";

[[noreturn]] void fail(const std::string& message) { throw Error(Status::InvalidArgument(message)); }

void fsync_directory(const std::string& path) {
  const int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

// Temporary file, fsync, rename, fsync of the folder.
void write_atomically(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("ElasticState: cannot create '" + temporary + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      fail("ElasticState: writing '" + temporary + "' failed: " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) fail("ElasticState: fsync of '" + temporary + "' failed: " + std::strerror(errno));
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    fail("ElasticState: renaming '" + temporary + "' to '" + path + "' failed: " + std::strerror(errno));
  }
  fsync_directory(fs::path(path).parent_path().string());
}

bool read_whole(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream out;
  out << in.rdbuf();
  *bytes = out.str();
  return !in.bad();
}

struct Manifest {
  int64_t id = -1;
  uint64_t bytes = 0;
  uint64_t checksum = 0;
};

std::string format_manifest(int64_t id, const std::string& state) {
  char checksum[17];
  std::snprintf(checksum, sizeof(checksum), "%016llx", static_cast<unsigned long long>(fnv1a64(state)));
  return std::string(kMagic) + "\nid " + std::to_string(id) + "\nbytes " + std::to_string(state.size()) +
         "\nfnv1a64 " + checksum + "\n";
}

bool parse_manifest(const std::string& text, Manifest* manifest) {
  std::istringstream in(text);
  std::string magic, key_id, key_bytes, key_checksum, checksum;
  if (!std::getline(in, magic) || magic != kMagic) return false;
  if (!(in >> key_id >> manifest->id >> key_bytes >> manifest->bytes >> key_checksum >> checksum)) return false;
  if (key_id != "id" || key_bytes != "bytes" || key_checksum != "fnv1a64" || checksum.size() != 16) return false;
  char* end = nullptr;
  manifest->checksum = std::strtoull(checksum.c_str(), &end, 16);
  return end == checksum.c_str() + 16;
}

}  // namespace

uint64_t fnv1a64(const std::string& bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

CommitStore::CommitStore(std::string root) : root_(std::move(root)) {}

std::string CommitStore::folder(int64_t id) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%s%012lld", kPrefix, static_cast<long long>(id));
  return (fs::path(root_) / name).string();
}

std::vector<int64_t> CommitStore::folders() const {
  std::vector<int64_t> ids;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || name.size() != std::strlen(kPrefix) + 12) continue;
    const std::string digits = name.substr(std::strlen(kPrefix));
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    ids.push_back(std::stoll(digits));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool CommitStore::is_complete(int64_t id) const {
  std::string text, state;
  Manifest manifest;
  return read_whole(folder(id) + "/MANIFEST", &text) && parse_manifest(text, &manifest) && manifest.id == id &&
         read_whole(folder(id) + "/state.bin", &state) && state.size() == manifest.bytes &&
         fnv1a64(state) == manifest.checksum;
}

int64_t CommitStore::newest_complete() const {
  const std::vector<int64_t> ids = folders();
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    if (is_complete(*it)) return *it;
  }
  return -1;
}

std::string CommitStore::read(int64_t id) const {
  std::string text, state;
  Manifest manifest;
  const std::string where = folder(id);
  if (!read_whole(where + "/MANIFEST", &text) || !parse_manifest(text, &manifest) || manifest.id != id) {
    fail("ElasticState: commit " + where + " has no valid MANIFEST (a commit interrupted before it was complete)");
  }
  if (!read_whole(where + "/state.bin", &state) || state.size() != manifest.bytes || fnv1a64(state) != manifest.checksum) {
    fail("ElasticState: " + where + "/state.bin does not match its MANIFEST (" + std::to_string(manifest.bytes) +
         " bytes expected): the commit is damaged");
  }
  return state;
}

void CommitStore::write(int64_t id, const std::string& bytes, int keep) {
  const std::string where = folder(id);
  std::error_code ec;
  // A folder of this id is left over from a commit that never completed
  // (or from a timeline abandoned at a restart): its manifest goes first,
  // so it is never taken as complete while it is being replaced.
  fs::remove(where + "/MANIFEST", ec);
  fs::remove_all(where, ec);
  fs::create_directories(where, ec);
  if (ec) fail("ElasticState: cannot create the commit folder '" + where + "': " + ec.message());
  fsync_directory(root_);
  write_atomically(where + "/state.bin", bytes);
  write_atomically(where + "/MANIFEST", format_manifest(id, bytes));  // the commit point
  // Keep the newest `keep` complete commits; drop the rest and torn ones.
  const std::vector<int64_t> ids = folders();
  int kept = 0;
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    if (*it != id && *it > id) {
      fs::remove_all(folder(*it), ec);  // a newer id can only be a torn leftover
      continue;
    }
    if (kept < keep && is_complete(*it)) {
      ++kept;
      continue;
    }
    fs::remove(folder(*it) + "/MANIFEST", ec);
    fs::remove_all(folder(*it), ec);
  }
}

}  // namespace elastic
}  // namespace torch
}  // namespace chorus
