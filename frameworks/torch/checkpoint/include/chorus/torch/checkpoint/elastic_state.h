// ElasticState: the training state an elastic job (chorusrun --elastic)
// commits every few steps and resumes from after a restart, as Horovod's
// hvd.elastic.TorchState: what a chorus::torch checkpoint holds (the model,
// the optimizer, optionally a GradScaler and the program's own values in
// CheckpointExtras: best loss, ...), plus the epoch and the position in the
// epoch's sample permutation (DistributedSampler::global_position).
//
//   chorus::torch::ElasticState state(model, optimizer);   // or (CheckpointContents)
//   if (state.restore()) sampler.set_epoch(state.epoch(), state.sample());
//   ... every N steps:  state.set_position(epoch, sampler.global_position(trained));
//                       state.commit();   // may throw HostsChanged
//   main(): catch (const chorus::torch::HostsChanged&) { shutdown; return chorus::kElasticRestartExitCode; }
//
// A commit is a checkpoint file (encode_checkpoint: XXH3-checked, tied to
// the model by its ModelSignature, written atomically), so a commit cut
// short by a failure is never used, and one of another model is refused by
// name. It survives the loss of any one host: in data-parallel training
// every rank holds the same state, so local rank 0 of every host writes it
// to that host's own folder (<directory>/<job>/<host name>/).
// restore() agrees (allreduce) on the newest commit complete on some rank,
// which that rank broadcasts to all, the ranks on new hosts included (the
// protocol is ElasticCommits', which the Python package shares).
//
// Learning rates follow the number of ranks: the optimizer's saved options
// include the learning rate of the run that committed, so after restore()
// set it again for the current size (set_learning_rate(optimizer,
// scale_learning_rate(base_lr))).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "chorus/elastic.h"
#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/elastic_commits.h"

namespace chorus {
namespace torch {

// Thrown by commit() on every rank, after the commit was written, when
// chorusrun --elastic said that more hosts are available: leave the training
// loop, call chorus::shutdown() and exit with kElasticRestartExitCode;
// chorusrun restarts the job on the new hosts, from this commit.
class HostsChanged : public std::runtime_error {
 public:
  explicit HostsChanged(int64_t commit);
  int64_t commit() const { return commit_; }

 private:
  int64_t commit_;
};

class ElasticState {
 public:
  // chorus::init() must have been called; what `contents` refers to must
  // outlive this. Without extras in `contents` the state keeps its own
  // (extras()). Throws chorus::Error for keep < 1.
  explicit ElasticState(const CheckpointContents& contents, ElasticStateOptions options = {});
  ElasticState(::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer, ElasticStateOptions options = {});
  ElasticState(const ElasticState&) = delete;
  ElasticState& operator=(const ElasticState&) = delete;

  // Collective. Loads on every rank the newest commit of this job that some
  // rank has complete and returns true; with none, makes every rank's model
  // and optimizer equal to rank 0's and returns false. Throws chorus::Error
  // on every rank when the commit cannot be loaded, e.g. "... was written
  // for another model (<difference>, checkpoint vs this run) ..." when the
  // folder holds another program's commits.
  bool restore();
  // Collective. Writes the current state as the next commit (on local rank 0
  // of every host), then throws HostsChanged on every rank if chorusrun asked
  // the job to grow. Throws chorus::Error on every rank when a host could not
  // write it (the failing rank names the path).
  void commit();

  void set_position(int64_t epoch, int64_t sample) {
    epoch_ = epoch;
    sample_ = sample;
  }
  int64_t epoch() const { return epoch_; }
  int64_t sample() const { return sample_; }  // position in the epoch's permutation
  // The program's own values, committed and restored with the state (keys
  // starting with "elastic." are the state's own). restore() replaces them
  // with the commit's.
  CheckpointExtras& extras() { return *contents_.extras(); }
  // The id of the last commit written or restored (-1: none yet).
  int64_t last_commit() const { return commits_.last_commit(); }
  // The number of ranks when the restored commit was written (0: none).
  int committed_size() const { return committed_size_; }
  // This rank's commit folder (the host's, or with every_rank_writes the
  // rank's); only writers use it.
  const std::string& host_directory() const { return commits_.host_directory(); }
  bool is_writer() const { return commits_.is_writer(); }
  // CHORUS_ELASTIC_RESTART: how often chorusrun restarted the job (0 without it).
  static int restart_count() { return ElasticCommits::restart_count(); }

 private:
  // The sealed checkpoint bytes of commit `id`.
  std::string encode(int64_t id);
  // Loads them on this rank (the extras included); chorus::Error on failure.
  void decode(const std::string& sealed, int64_t id, const std::string& what);

  CheckpointExtras own_extras_;  // used when the contents bring none
  CheckpointContents contents_;
  ElasticCommits commits_;
  int64_t epoch_ = 0;
  int64_t sample_ = 0;
  int committed_size_ = 0;
};

}  // namespace torch
}  // namespace chorus
