// The commits of one host: files <root>/commit-<id, 12 digits>.ckpt, each a
// checked file (chorus/checked_file.h: format line, length, XXH3 checksum)
// written by write_file_atomically (chorus/atomic_file.h: a temporary file,
// fsync, rename, fsync of the folder). A commit is complete when its file
// opens as the expected format with the right length and checksum; a write
// cut short by a failure leaves at most a temporary "<name>.tmp.XXXXXX"
// (never a commit's name), and a file damaged later (a disk that lost its
// tail, a foreign file under a commit's name) fails the check. Either is
// ignored, and removed by the next write.
//
// Small and torch-free on purpose: it only moves sealed bytes (which
// ElasticState makes with chorus::torch's encode_checkpoint), so it does not
// care what they hold.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/checked_file.h"

namespace chorus {
namespace torch {
namespace elastic {

class CommitStore {
 public:
  // `format`: what every commit file must be (its magic line); the root and
  // its parents are created on the first write.
  CommitStore(std::string root, CheckedFileFormat format);

  // Writes `sealed` (seal_checked bytes of `format`) as commit `id`,
  // replacing any file of that id, then removes temporary leftovers, torn
  // commits, commits newer than `id` (an abandoned timeline) and all but the
  // newest `keep` complete ones. Throws chorus::Error naming the path and
  // the step that failed (the commits already there are then unchanged).
  void write(int64_t id, const std::string& sealed, int keep);
  // The newest complete commit, -1 when there is none.
  int64_t newest_complete() const;
  // The verified sealed bytes of commit `id`; chorus::Error naming the file
  // and what is wrong with it (missing, truncated, corrupt, not a commit).
  std::string read(int64_t id) const;
  // Ids of every commit file, complete or not, ascending.
  std::vector<int64_t> ids() const;
  bool is_complete(int64_t id) const;

  const std::string& root() const { return root_; }
  std::string path(int64_t id) const;  // <root>/commit-<id, 12 digits>.ckpt

 private:
  std::string root_;
  CheckedFileFormat format_;
};

}  // namespace elastic
}  // namespace torch
}  // namespace chorus
