// ElasticCommits: the commit and restore protocol over each host's store.
#include "chorus/torch/checkpoint/elastic_commits.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "chorus/elastic.h"
#include "chorus/torch/checkpoint/checkpoint.h"
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

// One allreduce of small int64 flags (max over ranks).
std::vector<int64_t> max_over_ranks(const std::vector<int64_t>& values, const std::string& name) {
  AllreduceOptions options;
  options.op = ReduceOp::kMax;
  const ::torch::Tensor reduced = allreduce(::torch::tensor(values, ::torch::kInt64), name, options);
  return std::vector<int64_t>(reduced.data_ptr<int64_t>(), reduced.data_ptr<int64_t>() + reduced.numel());
}

// Whether chorusrun's rank wrapper left this rank the notice (one access()).
bool notice_seen() {
  const char* notice = std::getenv(kElasticNoticeVariable);
  return notice != nullptr && *notice != '\0' && ::access(notice, F_OK) == 0;
}

}  // namespace

ElasticCommits::ElasticCommits(CheckedFileFormat format, ElasticStateOptions options)
    : format_(std::move(format)), options_(std::move(options)) {
  if (options_.keep < 1) {
    throw Error(Status::InvalidArgument("ElasticState: keep is " + std::to_string(options_.keep) +
                                        "; expected at least 1 commit kept per host"));
  }
  if (options_.directory.empty()) options_.directory = env_or("CHORUS_ELASTIC_DIR", "/tmp/chorus-elastic");
  // Per job, so that a new job never resumes an old one's commits; per host,
  // so that hosts sharing a file system still keep copies of their own.
  std::filesystem::path folder = std::filesystem::path(job_directory()) / host_name();
  if (options_.every_rank_writes) folder /= "rank-" + std::to_string(chorus::rank());
  host_directory_ = folder.string();
  writer_ = options_.every_rank_writes || chorus::local_rank() == 0;
}

std::string ElasticCommits::job_directory() const {
  return (std::filesystem::path(options_.directory) / env_or(kElasticJobVariable, "default")).string();
}

int ElasticCommits::restart_count() { return std::atoi(env_or(kElasticRestartVariable, "0").c_str()); }

int64_t ElasticCommits::restore(const Decoder& decode) {
  const elastic::CommitStore store(host_directory_, format_);
  const int64_t mine = writer_ ? store.newest_complete() : -1;
  const int64_t newest = max_over_ranks({mine}, options_.name + ".restore.newest")[0];
  if (newest < 0) return -1;
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
      if (error.empty()) error = "unknown error";
      if (error.find("for another model") != std::string::npos) {
        error += " (the commit folder " + job_directory() +
                 " holds another program's commits: give this job another --elastic-dir or job id)";
      }
    }
  }
  // Every rank decoded the same bytes, but agree anyway: all fail alike.
  error = agree_on_error(error, options_.name + ".restore.outcome");
  if (!error.empty()) throw Error(Status::InvalidArgument(error));
  last_commit_ = newest;
  return newest;
}

bool ElasticCommits::commit(const Encoder& encode) {
  const int64_t id = last_commit_ + 1;
  std::string error;
  if (writer_) {
    try {
      elastic::CommitStore(host_directory_, format_).write(id, encode(id), options_.keep);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  // One collective for both: the highest rank whose write failed, and
  // whether any rank saw the notice.
  const std::vector<int64_t> any = max_over_ranks(
      {error.empty() ? -1 : int64_t{chorus::rank()}, notice_seen() ? 1 : 0}, options_.name + ".commit");
  if (any[0] >= 0) {
    // Its message, on every rank (only after a failure: one more broadcast).
    const std::string message = broadcast_bytes(error, static_cast<int>(any[0]), options_.name + ".commit.error");
    throw Error(Status::InvalidArgument("ElasticState::commit: commit " + std::to_string(id) + " failed on rank " + std::to_string(any[0]) +
         ": " + message));
  }
  last_commit_ = id;
  return any[1] != 0;
}

bool ElasticCommits::hosts_changed() {
  return max_over_ranks({notice_seen() ? 1 : 0}, options_.name + ".hosts")[0] != 0;
}

}  // namespace torch
}  // namespace chorus
