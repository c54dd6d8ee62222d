// Checkpoints of a LibTorch training run: the model's parameters and
// buffers, and optionally the optimizer's state, a GradScaler's state and
// the user's extras (CheckpointExtras), in one checksummed file
// (chorus/checked_file.h) tied to the model by its signature
// (ModelSignature).
//
//   chorus::torch::CheckpointContents contents(model);
//   contents.with_optimizer(adam).with_scaler(scaler).with_extras(progress);
//   chorus::torch::save_checkpoint_file("/ckpt/last.ckpt", contents);    // one rank
//   chorus::torch::restore_checkpoint("/ckpt/last.ckpt", contents);      // every rank
//
// Loading checks, before anything is changed: the file's format line,
// length and XXH3 checksum (a truncated, corrupt or foreign file is named as
// such), then the model signature (a checkpoint of another model names the
// first difference), then every section the contents ask for. The model,
// scaler and extras change only once all of that succeeded; the optimizer
// is loaded last before them (LibTorch cannot stage an optimizer's state).
//
// Resuming on many ranks (restore_checkpoint): one rank reads the file and
// broadcasts its bytes, and every rank verifies and decodes the same bytes,
// so every rank ends with identical model, optimizer, scaler and extras
// (bit for bit), and the file is read once. Every rank learns the outcome:
// an error anywhere fails every rank with the lowest failing rank's
// message, instead of leaving the others waiting in the next collective.
// CheckpointManager (checkpoint_manager.h) adds keep-last-N and a best file.
#pragma once

#include <string>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "chorus/checked_file.h"
#include "chorus/process_set.h"
#include "chorus/torch/checkpoint/checkpoint_extras.h"
#include "chorus/torch/grad_scaler.h"
#include "chorus/torch/checkpoint/model_signature.h"

namespace chorus {
namespace torch {

// The file format: "CHORUS-TORCH-CHECKPOINT 1", "Chorus checkpoint".
const CheckedFileFormat& checkpoint_format();

// What a checkpoint holds: references to the live objects it is written
// from and loaded into. They must outlive the contents.
class CheckpointContents {
 public:
  // `model_label`: the model's name in its signature; empty: model.name().
  explicit CheckpointContents(::torch::nn::Module& model, std::string model_label = "")
      : model_(&model), label_(std::move(model_label)) {}
  CheckpointContents& with_optimizer(::torch::optim::Optimizer& optimizer) {
    optimizer_ = &optimizer;
    return *this;
  }
  CheckpointContents& with_scaler(GradScaler& scaler) {
    scaler_ = &scaler;
    return *this;
  }
  CheckpointContents& with_extras(CheckpointExtras& extras) {
    extras_ = &extras;
    return *this;
  }

  ::torch::nn::Module& model() const { return *model_; }
  const std::string& model_label() const { return label_; }
  ::torch::optim::Optimizer* optimizer() const { return optimizer_; }
  GradScaler* scaler() const { return scaler_; }
  CheckpointExtras* extras() const { return extras_; }
  ModelSignature signature() const { return ModelSignature::of(*model_, label_); }

 private:
  ::torch::nn::Module* model_;
  std::string label_;
  ::torch::optim::Optimizer* optimizer_ = nullptr;
  GradScaler* scaler_ = nullptr;
  CheckpointExtras* extras_ = nullptr;
};

// The checkpoint file's bytes (checked header + payload).
std::string encode_checkpoint(const CheckpointContents& contents);
// Loads `bytes` into `contents` (see the top of this file). `what` names the
// source in messages, e.g. "Checkpoint '/ckpt/last.ckpt'". Throws
// chorus::Error: not a checkpoint, truncated, corrupt, written for another
// model ("... was written for another model (<difference>, checkpoint vs
// this run)"), or without a section the contents ask for (an optimizer or
// scaler state the file does not have). The extras are replaced by the
// file's (empty when it has none).
void decode_checkpoint(const std::string& bytes, const std::string& what,
                       const CheckpointContents& contents);

// encode_checkpoint + write_file_atomically (not a collective: any rank, any
// folder). Errors read "Cannot write checkpoint '<path>': ...".
void save_checkpoint_file(const std::string& path, const CheckpointContents& contents);
// Reads and decodes `path` on this rank alone. Errors name the path:
// "Cannot open checkpoint '<path>': No such file or directory", or
// "Checkpoint '<path>' is truncated", ...
void load_checkpoint_file(const std::string& path, const CheckpointContents& contents);

// Collective over `process_set`: root_rank (a job rank in the set) reads
// `path`, broadcasts its bytes, and every member decodes them into its
// `contents`. Every member returns, or every member throws chorus::Error
// with the lowest failing rank's message. `name` prefixes the collectives.
void restore_checkpoint(const std::string& path, const CheckpointContents& contents,
                        int root_rank = 0, const ProcessSet& process_set = {},
                        const std::string& name = "checkpoint.restore");

// Collective over `process_set`: the members' errors ("" where all went
// well) become one agreed outcome: "" on every member, or the message of the
// lowest failing rank (with "rank <r>: " in front when that is not this
// rank). For any step only some ranks perform (a write on rank 0, a read).
std::string agree_on_error(const std::string& local_error, const std::string& name,
                           const ProcessSet& process_set = {});

}  // namespace torch
}  // namespace chorus
