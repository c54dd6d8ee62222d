#include "elastic_commit_store.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "chorus/atomic_file.h"
#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace elastic {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommitPrefix = "commit-";
constexpr const char* kCommitSuffix = ".ckpt";
constexpr size_t kDigits = 12;
constexpr const char* kKind = "elastic commit";

// The id of "commit-<12 digits>.ckpt", or -1 for any other name (temporary
// files "commit-....ckpt.tmp.XXXXXX" included).
int64_t id_of(const std::string& name) {
  const size_t prefix = std::strlen(kCommitPrefix), suffix = std::strlen(kCommitSuffix);
  if (name.size() != prefix + kDigits + suffix || name.rfind(kCommitPrefix, 0) != 0 ||
      name.compare(prefix + kDigits, suffix, kCommitSuffix) != 0) {
    return -1;
  }
  const std::string digits = name.substr(prefix, kDigits);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoll(digits);
}

bool is_temporary(const std::string& name) {
  return name.rfind(kCommitPrefix, 0) == 0 && name.find(std::string(kCommitSuffix) + ".tmp.") != std::string::npos;
}

}  // namespace

CommitStore::CommitStore(std::string root, CheckedFileFormat format)
    : root_(std::move(root)), format_(std::move(format)) {}

std::string CommitStore::path(int64_t id) const {
  char name[48];
  std::snprintf(name, sizeof(name), "%s%012lld%s", kCommitPrefix, static_cast<long long>(id), kCommitSuffix);
  return (fs::path(root_) / name).string();
}

std::vector<int64_t> CommitStore::ids() const {
  std::vector<int64_t> ids;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, ec)) {
    const int64_t id = id_of(entry.path().filename().string());
    if (id >= 0) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool CommitStore::is_complete(int64_t id) const {
  try {
    read(id);
    return true;
  } catch (const Error&) {
    return false;
  }
}

int64_t CommitStore::newest_complete() const {
  const std::vector<int64_t> all = ids();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (is_complete(*it)) return *it;
  }
  return -1;
}

std::string CommitStore::read(int64_t id) const {
  const std::string file = path(id);
  const std::string bytes = read_whole_file(file, kKind);
  open_checked(format_, bytes, "Elastic commit '" + file + "'");  // throws when torn
  return bytes;
}

void CommitStore::write(int64_t id, const std::string& sealed, int keep) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec || !fs::is_directory(root_)) {
    throw Error(Status::InvalidArgument("Cannot write " + std::string(kKind) + " '" + path(id) +
                                        "': cannot create its folder '" + root_ + "': " +
                                        (ec ? ec.message() : "not a directory")));
  }
  write_file_atomically(path(id), sealed, kKind);  // the commit point
  // Temporary files of writes that died; then keep the newest `keep`
  // complete commits up to `id` and drop the rest.
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, ec)) {
    if (is_temporary(entry.path().filename().string())) fs::remove(entry.path(), ec);
  }
  const std::vector<int64_t> all = ids();
  int kept = 0;
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (*it <= id && kept < keep && is_complete(*it)) {
      ++kept;
      continue;
    }
    fs::remove(path(*it), ec);  // newer than id (abandoned), torn, or beyond keep
  }
}

}  // namespace elastic
}  // namespace torch
}  // namespace chorus
