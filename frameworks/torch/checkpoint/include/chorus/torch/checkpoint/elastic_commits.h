// ElasticCommits: how the ranks of an elastic job (chorusrun --elastic)
// commit sealed bytes to every host's own disk and agree on the newest
// commit after a restart, whatever the bytes hold. ElasticState commits
// chorus::torch checkpoints through it; the Python package's
// chorus.torch.elastic.TorchState commits its own payload through it (in
// files of its own format), so both share one store, one protocol and one
// set of checks.
//
// Where: local rank 0 of every host (or, with every_rank_writes, every rank)
// writes to <directory>/<CHORUS_ELASTIC_JOB>/<host name>[/rank-<r>]/, one
// checked file per commit (elastic_commit_store.h: XXH3, atomic write).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "chorus/checked_file.h"

namespace chorus {
namespace torch {

struct ElasticStateOptions {
  // Where each host keeps its copies; a folder on the host's own disk
  // (node-local storage), default $CHORUS_ELASTIC_DIR or /tmp/chorus-elastic.
  std::string directory;
  // Complete commits kept per host (>= 1); older ones are removed.
  int keep = 2;
  // Every rank writes its own copy to <host folder>/rank-<rank>/ instead of
  // local rank 0 for the host: one copy per rank rather than per host (for
  // disks shared by several hosts' ranks, or to simulate hosts on one
  // machine in tests). restore() reads whichever rank has the newest.
  bool every_rank_writes = false;
  // Prefix of the collectives' names.
  std::string name = "elastic";
};

class ElasticCommits {
 public:
  // Loads commit `id` (its sealed bytes, as the store verified them) on this
  // rank; throws (any std::exception) when it cannot. `what` names the
  // commit for messages ("Elastic commit 7 (read by rank 2)").
  using Decoder = std::function<void(const std::string& sealed, int64_t id, const std::string& what)>;
  // The sealed bytes of commit `id`; called on writers only.
  using Encoder = std::function<std::string(int64_t id)>;

  // chorus::init() must have been called. Every commit file must be of
  // `format`. Throws chorus::Error for keep < 1.
  ElasticCommits(CheckedFileFormat format, ElasticStateOptions options = {});

  // Collective. Finds the newest commit of this job complete on some rank;
  // the lowest rank holding it broadcasts it and every rank decodes it.
  // Returns its id, or -1 when no rank has one (nothing decoded). Throws
  // chorus::Error on every rank when a rank could not read or decode it
  // (the message of the lowest failing rank).
  int64_t restore(const Decoder& decode);
  // Collective. Writes encode(last_commit() + 1) on the writers, then returns
  // whether chorusrun asked the job to grow (the notice file on any rank).
  // Throws chorus::Error on every rank when a writer failed (its message
  // names the path).
  bool commit(const Encoder& encode);
  // Collective: whether chorusrun asked the job to grow, agreed by all
  // ranks (one small allreduce), without committing.
  bool hosts_changed();

  // The id of the last commit written or restored (-1: none yet).
  int64_t last_commit() const { return last_commit_; }
  const std::string& host_directory() const { return host_directory_; }
  bool is_writer() const { return writer_; }
  const ElasticStateOptions& options() const { return options_; }
  // The folder holding every host's commits of this job.
  std::string job_directory() const;
  // CHORUS_ELASTIC_RESTART: how often chorusrun restarted the job (0 without it).
  static int restart_count();

 private:
  CheckedFileFormat format_;
  ElasticStateOptions options_;
  std::string host_directory_;
  bool writer_ = false;  // local rank 0, or every rank with every_rank_writes
  int64_t last_commit_ = -1;
};

}  // namespace torch
}  // namespace chorus
