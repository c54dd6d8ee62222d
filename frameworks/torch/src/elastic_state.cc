// ElasticState: commits to every host's own disk, restore from the newest.
#include "chorus/torch/elastic_state.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <torch/serialize.h>

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

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown-host";
  return name;
}

::torch::Tensor scalar(int64_t value) { return ::torch::tensor(value, ::torch::kInt64); }

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

ElasticState::ElasticState(::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer,
                           ElasticStateOptions options)
    : model_(model), optimizer_(optimizer), options_(std::move(options)) {
  if (options_.keep < 1) {
    throw Error(Status::InvalidArgument("ElasticState: keep is " + std::to_string(options_.keep) +
                                        "; expected at least 1 commit kept per host"));
  }
  if (options_.directory.empty()) options_.directory = env_or("CHORUS_ELASTIC_DIR", "/tmp/chorus-elastic");
  // Per job, so that a new job never resumes an old one's commits; per host,
  // so that hosts sharing a file system still keep copies of their own.
  host_directory_ = (std::filesystem::path(options_.directory) / env_or(kElasticJobVariable, "default") /
                     host_name())
                        .string();
  writer_ = chorus::local_rank() == 0;
}

int ElasticState::restart_count() { return std::atoi(env_or(kElasticRestartVariable, "0").c_str()); }

double ElasticState::value(const std::string& name, double fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::string ElasticState::serialize() const {
  ::torch::serialize::OutputArchive archive;
  ::torch::serialize::OutputArchive model, optimizer, values;
  model_.save(model);
  optimizer_.save(optimizer);
  for (const auto& [name, value] : values_) values.write(name, ::torch::tensor(value, ::torch::kFloat64), true);
  archive.write("model", model);
  archive.write("optimizer", optimizer);
  archive.write("values", values);
  archive.write("epoch", scalar(epoch_), true);
  archive.write("sample", scalar(sample_), true);
  archive.write("size", scalar(chorus::size()), true);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void ElasticState::deserialize(const std::string& bytes) {
  std::istringstream in(bytes);
  ::torch::serialize::InputArchive archive;
  archive.load_from(in);
  ::torch::serialize::InputArchive model, optimizer, values;
  archive.read("model", model);
  archive.read("optimizer", optimizer);
  archive.read("values", values);
  model_.load(model);
  optimizer_.load(optimizer);
  values_.clear();
  for (const std::string& key : values.keys()) {
    ::torch::Tensor value;
    values.read(key, value, true);
    values_[key] = value.item<double>();
  }
  ::torch::Tensor epoch, sample, size;
  archive.read("epoch", epoch, true);
  archive.read("sample", sample, true);
  archive.read("size", size, true);
  epoch_ = epoch.item<int64_t>();
  sample_ = sample.item<int64_t>();
  committed_size_ = static_cast<int>(size.item<int64_t>());
}

bool ElasticState::restore() {
  const elastic::CommitStore store(host_directory_);
  const int64_t mine = writer_ ? store.newest_complete() : -1;
  const int64_t newest = max_over_ranks({mine}, options_.name + ".restore.newest")[0];
  if (newest < 0) {
    broadcast_parameters(model_, 0);
    broadcast_optimizer_state(optimizer_, 0);
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
  if (payload.empty() || payload[0] != '+') {
    throw Error(Status::InvalidArgument("ElasticState::restore: rank " + std::to_string(holder) +
                                        " could not read commit " + std::to_string(newest) + ": " +
                                        (payload.empty() ? "" : payload.substr(1))));
  }
  deserialize(payload.substr(1));
  last_commit_ = newest;
  return true;
}

void ElasticState::commit() {
  const int64_t id = last_commit_ + 1;
  std::string error;
  if (writer_) {
    try {
      elastic::CommitStore(host_directory_).write(id, serialize(), options_.keep);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  const char* notice = std::getenv(kElasticNoticeVariable);
  const bool grow = notice != nullptr && *notice != '\0' && ::access(notice, F_OK) == 0;
  // One collective for both: a failed write anywhere, a notice anywhere.
  const std::vector<int64_t> any =
      max_over_ranks({error.empty() ? 0 : 1, grow ? 1 : 0}, options_.name + ".commit");
  if (!error.empty()) throw Error(Status::InvalidArgument(error));
  if (any[0] != 0) {
    throw Error(Status::InvalidArgument("ElasticState::commit: commit " + std::to_string(id) +
                                        " could not be written on another host (its rank names the path)"));
  }
  last_commit_ = id;
  if (any[1] != 0) throw HostsChanged(id);
}

}  // namespace torch
}  // namespace chorus
