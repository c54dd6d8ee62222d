// ElasticState: chorus::torch checkpoints committed through ElasticCommits.
#include "chorus/torch/checkpoint/elastic_state.h"

#include <string>

#include "chorus/chorus.h"
#include "chorus/torch/state_broadcast.h"

namespace chorus {
namespace torch {
namespace {

// The state's own keys in the commit's extras.
constexpr const char* kCommitKey = "elastic.commit";
constexpr const char* kEpochKey = "elastic.epoch";
constexpr const char* kSampleKey = "elastic.sample";
constexpr const char* kSizeKey = "elastic.size";

void remove_position(CheckpointExtras& extras) {
  for (const char* key : {kCommitKey, kEpochKey, kSampleKey, kSizeKey}) extras.remove(key);
}

}  // namespace

HostsChanged::HostsChanged(int64_t commit)
    : std::runtime_error("chorusrun reported that the hosts changed: the ranks stopped after commit " +
                         std::to_string(commit) + " to be restarted on the new hosts"),
      commit_(commit) {}

ElasticState::ElasticState(const CheckpointContents& contents, ElasticStateOptions options)
    : contents_(contents), commits_(checkpoint_format(), std::move(options)) {
  if (contents_.extras() == nullptr) contents_.with_extras(own_extras_);
}

ElasticState::ElasticState(::torch::nn::Module& model, ::torch::optim::Optimizer& optimizer,
                           ElasticStateOptions options)
    : ElasticState(CheckpointContents(model).with_optimizer(optimizer), std::move(options)) {}

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
      throw Error(Status::InvalidArgument(what + " has no value '" + key + "'; expected a commit written by ElasticState::commit()"));
    }
  }
  if (extras.get_int(kCommitKey) != id) {
    throw Error(Status::InvalidArgument(what + " holds commit " + std::to_string(extras.get_int(kCommitKey)) + ", not " + std::to_string(id) +
         " as its file name says; expected the file ElasticState::commit() wrote"));
  }
  epoch_ = extras.get_int(kEpochKey);
  sample_ = extras.get_int(kSampleKey);
  committed_size_ = static_cast<int>(extras.get_int(kSizeKey));
  remove_position(extras);
}

bool ElasticState::restore() {
  const int64_t restored = commits_.restore(
      [this](const std::string& sealed, int64_t id, const std::string& what) { decode(sealed, id, what); });
  if (restored >= 0) return true;
  broadcast_parameters(contents_.model(), 0);
  if (contents_.optimizer() != nullptr) broadcast_optimizer_state(*contents_.optimizer(), 0);
  return false;
}

void ElasticState::commit() {
  if (commits_.commit([this](int64_t id) { return encode(id); })) throw HostsChanged(commits_.last_commit());
}

}  // namespace torch
}  // namespace chorus
