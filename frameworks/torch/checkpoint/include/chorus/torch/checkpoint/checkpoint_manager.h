// A folder of checkpoints (Keras' ModelCheckpoint, Orbax's
// CheckpointManager): save() writes "<folder>/checkpoint-<step>.ckpt",
// keeps the newest `keep_last` of them (older ones are deleted only after
// the new one is safely on disk), and copies a checkpoint whose metric is
// the best so far to "<folder>/best.ckpt". restore_latest() resumes from the
// newest. The best metric so far travels inside the checkpoints, so a
// resumed run keeps comparing against it.
//
// Writers: by default rank 0 writes (every rank's replica is the same) and
// restore broadcasts rank 0's file; with every_rank_writes each rank writes
// and reads its own folder (e.g. "<root>/rank-<r>", for state that differs
// per rank). save() and restore_latest() are collectives over the process
// set either way, so an error on a writer fails every rank with its message.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "chorus/process_set.h"
#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/metric_mode.h"

namespace chorus {
namespace torch {

struct CheckpointManagerOptions {
  std::string directory;  // created (with parents) on the writers
  int keep_last = 1;      // >= 1: numbered checkpoints kept
  MetricMode mode = MetricMode::kMin;  // a lower (kMin) or higher (kMax) metric is better
  // Improvement needed for a new best: metric < best - min_delta (kMin), >= 0.
  double min_delta = 0;
  int writer_rank = 0;             // the job rank that writes (and reads on restore)
  bool every_rank_writes = false;  // each rank its own `directory` instead
  ProcessSet process_set;          // the ranks that take part
  std::string name = "checkpoint";  // collective names' prefix
};

class CheckpointManager {
 public:
  // Collective: the writers create the folder; an unusable one fails every
  // rank ("Cannot use checkpoint folder '<dir>': ..."). Throws chorus::Error
  // for bad options.
  explicit CheckpointManager(CheckpointManagerOptions options);

  // Collective. Writes `contents` as checkpoint `step` (>= 0; e.g. epochs
  // completed) and prunes to keep_last; with a metric, also best.ckpt when
  // the metric improves on the best so far. Returns whether it was a new
  // best. A failed write fails every rank and leaves the folder's previous
  // files intact.
  bool save(const CheckpointContents& contents, int64_t step, double metric);
  void save(const CheckpointContents& contents, int64_t step);

  // Collective. Loads the newest checkpoint into `contents` (identical on
  // every rank with a single writer) and returns its step; throws
  // chorus::Error on every rank when there is none ("No checkpoint in
  // '<dir>' ...") or it cannot be loaded.
  int64_t restore_latest(const CheckpointContents& contents);
  // Collective. restore_latest() when there is a checkpoint to resume from,
  // else leaves `contents` as it is and returns 0 (a fresh start): the
  // writer's folder decides, so ranks that cannot see it agree. With
  // every_rank_writes, some ranks with checkpoints and others without is an
  // error on every rank naming one of each.
  int64_t resume(const CheckpointContents& contents);
  // The same as restore_latest for best.ckpt (returns its step).
  int64_t restore_best(const CheckpointContents& contents);

  // The files on this rank (the writers' view; local, not a collective).
  std::string checkpoint_path(int64_t step) const;
  std::string best_path() const;
  std::vector<int64_t> steps() const;  // numbered checkpoints present, ascending
  // The best metric so far (+inf for kMin, -inf for kMax before any).
  double best_metric() const { return best_metric_; }
  bool is_writer() const;

 private:
  int64_t restore(const std::string& path, const CheckpointContents& contents, const std::string& what);
  void prune() const;

  CheckpointManagerOptions options_;
  double best_metric_;
};

// The steps of the "checkpoint-<step>.ckpt" files in `directory`, ascending
// (none when it does not exist), and the newest one's path ("" when none).
// Local, not collectives: e.g. for tools that read a manager's folder.
std::vector<int64_t> checkpoint_steps_in(const std::string& directory);
std::string latest_checkpoint_in(const std::string& directory);

}  // namespace torch
}  // namespace chorus
