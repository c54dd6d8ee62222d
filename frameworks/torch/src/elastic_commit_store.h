// The commits of one host: folders <root>/commit-<id>/ holding state.bin
// (the serialized state) and MANIFEST, written last:
//   chorus-elastic-commit 1
//   id <id>
//   bytes <length of state.bin>
//   fnv1a64 <checksum of state.bin, 16 hex digits>
// A commit is complete when its MANIFEST parses, names its own id, and
// state.bin has that length and checksum; anything else (a folder whose
// writer died before the manifest, a truncated state) is torn and ignored,
// and removed by the next write. Each file is written to a temporary name,
// fsynced and renamed, and the folder fsynced, so a crash at any point
// leaves either the complete commit or a torn one, never a mix.
//
// Small and torch-free on purpose: it only moves bytes, so the store can be
// swapped for another (e.g. a shared checkpoint library) without touching
// ElasticState.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chorus {
namespace torch {
namespace elastic {

class CommitStore {
 public:
  // Creates `root` (and its parents) on the first write.
  explicit CommitStore(std::string root);

  // Writes `bytes` as commit `id` (replacing a leftover folder of that id),
  // then removes torn commits and all but the newest `keep` complete ones.
  // Throws chorus::Error naming the path and the step that failed.
  void write(int64_t id, const std::string& bytes, int keep);
  // The newest complete commit, -1 when there is none.
  int64_t newest_complete() const;
  // The verified bytes of a complete commit; throws chorus::Error otherwise.
  std::string read(int64_t id) const;
  // Ids of every commit folder, complete or not, ascending.
  std::vector<int64_t> folders() const;
  bool is_complete(int64_t id) const;

  const std::string& root() const { return root_; }
  std::string folder(int64_t id) const;  // <root>/commit-<id, 12 digits>

 private:
  std::string root_;
};

// FNV-1a, 64 bits (the checksum in MANIFEST).
uint64_t fnv1a64(const std::string& bytes);

}  // namespace elastic
}  // namespace torch
}  // namespace chorus
