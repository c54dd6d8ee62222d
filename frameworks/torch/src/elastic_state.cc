// ElasticState: commits to every host's own disk, restore from the newest.
#include "chorus/torch/elastic_state.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/state_broadcast.h"
#include "elastic_commit_store.h"

namespace chorus {
namespace torch {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The host's commit folder is named as chorusrun names the host: under
// Slurm by its node name (virtual nodes may share a host name and /tmp).
std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') std::snprintf(name, sizeof(name), "unknown-host");
  return elastic_host_name(name, std::getenv("SLURMD_NODENAME"));
}

[[noreturn]] void fail(const std::string& message) { throw Error(Status::InvalidArgument(message)); }

// The state's own keys in the commit's extras.
constexpr const char* kCommitKey = "elastic.commit";
constexpr const char* kEpochKey = "elastic.epoch";
constexpr const char* kSampleKey = "elastic.sample";
constexpr const char* kSizeKey = "elastic.size";

void remove_position(CheckpointExtras& extras) {
  for (const char* key : {kCommitKey, kEpochKey, kSampleKey, kSizeKey}) extras.remove(key);
}

// One allreduce of small int64 flags (max over ranks).
std::vector<int64_t> max_over_ranks(const std::vector<int64_t>& values, const std::string& name) {
  AllreduceOptions options;
  options.op = ReduceOp::kMax;
  const ::torch::Tensor reduced = allreduce(::torch::tensor(values, ::torch::kInt64), name, options);
  return std::vector<int64_t>(reduced.data_ptr<int64_t>(), reduced.data_ptr<int64_t>() + reduced.numel());
}

}  // namespace

HostsChanged::HostsChanged(int64_t commit)
    : std::runtime_error("chorusrun reported that the hosts changed: the ranks stopped after commit " +
                         std::to_string(commit) + " to be restarted on the new hosts"),
      commit_(commit) {}

ElasticState::ElasticState(const CheckpointContents& contents, ElasticStateOptions options)
    : contents_(contents), options_(std::move(options)) {
  if (options_.keep < 1) {
    throw Error(Status::InvalidArgument("ElasticState: keep is " + std::to_string(options_.keep) +
                                        "; expected at least 1 commit kept per host"));
  }
  if (contents_.extras() == nullptr) contents_.with_extras(own_extras_);
  if (options_.directory.empty()) options_.directory = env_or("CHORUS_ELASTIC_DIR", "/tmp/chorus-elastic");
  // Per job, so that a new job never resumes an old one's commits; per host,
  // so that hosts sharing a file system still keep copies of their own.
  std::filesystem::path folder =
      std::filesystem::path(options_.directory) / env_or(kElasticJobVariable, "default") / host_name();
  if (options_.every_rank_writes) folder /= "rank-" + std::to_string(chorus::rank());
  host_directory_ = folder.string();
  writer_ = options_.every_rank_writes || chorus::local_rank() == 0;
}

ElasticState::ElasticState(::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer,
                           ElasticStateOptions options)
    : ElasticState(CheckpointContents(model).with_optimizer(optimizer), std::move(options)) {}

int ElasticState::restart_count() { return std::atoi(env_or(kElasticRestartVariable, "0").c_str()); }

std::string ElasticState::encode(int64_t id) {
  // The position travels in the extras, and leaves them again: the
  // program's extras may also go into its ordinary checkpoints.
  CheckpointExtras& extras = *contents_.extras();
  extras.set_int(kCommitKey, id);
  extras.set_int(kEpochKey, epoch_);
  extras.set_int(kSampleKey, sample_);
  extras.set_int(kSizeKey, chorus::size());
  std::string sealed;
  try {
    sealed = encode_checkpoint(contents_);
  } catch (...) {
    remove_position(extras);
    throw;
  }
  remove_position(extras);
  return sealed;
}

void ElasticState::decode(const std::string& sealed, int64_t id, const std::string& what) {
  decode_checkpoint(sealed, what, contents_);
  CheckpointExtras& extras = *contents_.extras();
  for (const char* key : {kCommitKey, kEpochKey, kSampleKey, kSizeKey}) {
    if (!extras.contains(key)) {
      fail(what + " has no value '" + key + "'; expected a commit written by ElasticState::commit()");
    }
  }
  if (extras.get_int(kCommitKey) != id) {
    fail(what + " holds commit " + std::to_string(extras.get_int(kCommitKey)) + ", not " + std::to_string(id) +
         " as its file name says; expected the file ElasticState::commit() wrote");
  }
  epoch_ = extras.get_int(kEpochKey);
  sample_ = extras.get_int(kSampleKey);
  committed_size_ = static_cast<int>(extras.get_int(kSizeKey));
  remove_position(extras);
}

bool ElasticState::restore() {
  const elastic::CommitStore store(host_directory_, checkpoint_format());
  const int64_t mine = writer_ ? store.newest_complete() : -1;
  const int64_t newest = max_over_ranks({mine}, options_.name + ".restore.newest")[0];
  if (newest < 0) {
    broadcast_parameters(contents_.model(), 0);
    if (contents_.optimizer() != nullptr) broadcast_optimizer_state(*contents_.optimizer(), 0);
    return false;
  }
  // The lowest rank holding it sends it (max of -rank = -min rank).
  const int64_t holder = -max_over_ranks({mine == newest ? -static_cast<int64_t>(chorus::rank()) : INT64_MIN + 1},
                                         options_.name + ".restore.holder")[0];
  std::string payload;
  if (chorus::rank() == holder) {
    try {
      payload = "+" + store.read(newest);
    } catch (const std::exception& e) {
      payload = std::string("-") + e.what();
    }
  }
  payload = broadcast_bytes(payload, static_cast<int>(holder), options_.name + ".restore.state");
  std::string error;
  if (payload.empty() || payload[0] != '+') {
    error = "ElasticState::restore: rank " + std::to_string(holder) + " could not read commit " +
            std::to_string(newest) + ": " + (payload.empty() ? "nothing received" : payload.substr(1));
  } else {
    try {
      decode(payload.substr(1), newest,
             "Elastic commit " + std::to_string(newest) + " (read by rank " + std::to_string(holder) + ")");
    } catch (const std::exception& e) {
      error = e.what();
      if (error.find("for another model") != std::string::npos) {
        error += " (the commit folder " + options_.directory + "/" + env_or(kElasticJobVariable, "default") +
                 " holds another program's commits: give this job another --elastic-dir or job id)";
      }
    }
  }
  // Every rank decoded the same bytes, but agree anyway: all fail alike.
  error = agree_on_error(error, options_.name + ".restore.outcome");
  if (!error.empty()) fail(error);
  last_commit_ = newest;
  return true;
}

void ElasticState::commit() {
  const int64_t id = last_commit_ + 1;
  std::string error;
  if (writer_) {
    try {
      elastic::CommitStore(host_directory_, checkpoint_format()).write(id, encode(id), options_.keep);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  const char* notice = std::getenv(kElasticNoticeVariable);
  const bool grow = notice != nullptr && *notice != '\0' && ::access(notice, F_OK) == 0;
  // One collective for both: the highest rank whose write failed, and
  // whether any rank saw the notice.
  const std::vector<int64_t> any =
      max_over_ranks({error.empty() ? -1 : int64_t{chorus::rank()}, grow ? 1 : 0}, options_.name + ".commit");
  if (any[0] >= 0) {
    // Its message, on every rank (only after a failure: one more broadcast).
    const std::string message = broadcast_bytes(error, static_cast<int>(any[0]), options_.name + ".commit.error");
    fail("ElasticState::commit: commit " + std::to_string(id) + " failed on rank " + std::to_string(any[0]) +
         ": " + message);
  }
  last_commit_ = id;
  if (any[1] != 0) throw HostsChanged(id);
}

}  // namespace torch
}  // namespace chorus
