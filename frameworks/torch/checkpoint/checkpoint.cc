#include "chorus/torch/checkpoint/checkpoint.h"

#include <limits>
#include <sstream>
#include <utility>
#include <vector>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "chorus/atomic_file.h"
#include "chorus/chorus.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/state_broadcast.h"

namespace chorus {
namespace torch {
namespace {

// The model's tensors in signature order: parameters, then buffers.
std::vector<::torch::Tensor> model_tensors(const ::torch::nn::Module& model) {
  std::vector<::torch::Tensor> tensors;
  for (const auto& item : model.named_parameters()) tensors.push_back(item.value());
  for (const auto& item : model.named_buffers()) tensors.push_back(item.value());
  return tensors;
}

std::string tensor_key(size_t i) { return "tensor." + std::to_string(i); }

// LibTorch's messages carry a C++ backtrace; the first line is the reason.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// What decode_checkpoint reads before it changes anything.
struct Staged {
  std::vector<::torch::Tensor> tensors;
  GradScalerState scaler;
  CheckpointExtras extras;
};

Staged stage(::torch::serialize::InputArchive& archive, const std::string& what,
             const CheckpointContents& contents) {
  c10::IValue signature_text;
  if (!archive.try_read("signature", signature_text) || !signature_text.isString()) {
    throw Error(Status::InvalidArgument(what + " has no model signature"));
  }
  const ModelSignature found = ModelSignature::parse(signature_text.toStringRef(), what);
  const ModelSignature expected = contents.signature();
  const std::string difference = found.difference(expected);
  if (!difference.empty()) {
    throw Error(Status::InvalidArgument(what + " was written for another model (" + difference +
         ", checkpoint vs this run); expected a checkpoint of model " + expected.model +
         " with the same parameter and buffer names, shapes and dtypes"));
  }
  Staged staged;
  ::torch::serialize::InputArchive model_archive;
  if (!archive.try_read("model", model_archive)) throw Error(Status::InvalidArgument(what + " has no model state"));
  for (size_t i = 0; i < expected.tensors.size(); ++i) {
    ::torch::Tensor tensor;
    if (!model_archive.try_read(tensor_key(i), tensor)) {
      throw Error(Status::InvalidArgument(what + " has no value for " + expected.tensors[i].kind + " " + expected.tensors[i].name));
    }
    if (tensor.sizes().vec() != expected.tensors[i].shape) {
      throw Error(Status::InvalidArgument(what + " has a value of another shape for " + expected.tensors[i].name));
    }
    staged.tensors.push_back(tensor);
  }
  if (contents.scaler() != nullptr) {
    ::torch::serialize::InputArchive scaler_archive;
    if (!archive.try_read("grad_scaler", scaler_archive)) {
      throw Error(Status::InvalidArgument(what + " has no GradScaler state; expected one, since this run checkpoints a GradScaler"));
    }
    GradScaler scratch;
    scratch.load(scaler_archive);
    staged.scaler = scratch.state();
  }
  if (contents.extras() != nullptr) {
    ::torch::serialize::InputArchive extras_archive;
    if (archive.try_read("extras", extras_archive)) staged.extras.load(extras_archive);
  }
  return staged;
}

}  // namespace

const CheckedFileFormat& checkpoint_format() {
  static const CheckedFileFormat format{"CHORUS-TORCH-CHECKPOINT 1", "Chorus checkpoint"};
  return format;
}

std::string encode_checkpoint(const CheckpointContents& contents) {
  ::torch::serialize::OutputArchive archive;
  archive.write("signature", c10::IValue(contents.signature().serialize()));
  ::torch::serialize::OutputArchive model_archive;
  const std::vector<::torch::Tensor> tensors = model_tensors(contents.model());
  for (size_t i = 0; i < tensors.size(); ++i) model_archive.write(tensor_key(i), tensors[i].detach());
  archive.write("model", model_archive);
  if (contents.optimizer() != nullptr) {
    ::torch::serialize::OutputArchive optimizer_archive;
    contents.optimizer()->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }
  if (contents.scaler() != nullptr) {
    ::torch::serialize::OutputArchive scaler_archive;
    contents.scaler()->save(scaler_archive);
    archive.write("grad_scaler", scaler_archive);
  }
  if (contents.extras() != nullptr) {
    ::torch::serialize::OutputArchive extras_archive;
    contents.extras()->save(extras_archive);
    archive.write("extras", extras_archive);
  }
  std::ostringstream payload;
  archive.save_to(payload);
  return seal_checked(checkpoint_format(), payload.str());
}

void decode_checkpoint(const std::string& bytes, const std::string& what,
                       const CheckpointContents& contents) {
  const std::string payload = open_checked(checkpoint_format(), bytes, what);
  Staged staged;
  try {
    ::torch::serialize::InputArchive archive;
    std::istringstream stream(payload);
    archive.load_from(stream);
    staged = stage(archive, what, contents);
    if (contents.optimizer() != nullptr) {
      ::torch::serialize::InputArchive optimizer_archive;
      if (!archive.try_read("optimizer", optimizer_archive)) {
        throw Error(Status::InvalidArgument(what + " has no optimizer state; expected one, since this run checkpoints an optimizer"));
      }
      contents.optimizer()->load(optimizer_archive);
    }
  } catch (const Error& e) {
    // Ours already name the file; a GradScaler's or extras' get the name here.
    const std::string message = e.what();
    if (message.rfind(what, 0) == 0) throw;
    throw Error(Status::InvalidArgument(what + " cannot be loaded: " + message));
  } catch (const std::exception& e) {
    throw Error(Status::InvalidArgument(what + " cannot be read as a Chorus checkpoint: " + first_line(e.what())));
  }
  ::torch::NoGradGuard no_grad;
  const std::vector<::torch::Tensor> targets = model_tensors(contents.model());
  for (size_t i = 0; i < targets.size(); ++i) targets[i].copy_(staged.tensors[i]);
  if (contents.scaler() != nullptr) contents.scaler()->load_state(staged.scaler);
  if (contents.extras() != nullptr) *contents.extras() = std::move(staged.extras);
}

void save_checkpoint_file(const std::string& path, const CheckpointContents& contents) {
  write_file_atomically(path, encode_checkpoint(contents), "checkpoint");
}

void load_checkpoint_file(const std::string& path, const CheckpointContents& contents) {
  decode_checkpoint(read_whole_file(path, "checkpoint"), "Checkpoint '" + path + "'", contents);
}

std::string agree_on_error(const std::string& local_error, const std::string& name,
                           const ProcessSet& process_set) {
  const int64_t none = std::numeric_limits<int64_t>::max();
  ::torch::Tensor failing = ::torch::full({1}, local_error.empty() ? none : int64_t{chorus::rank()},
                                          ::torch::TensorOptions().dtype(::torch::kInt64));
  AllreduceOptions options;
  options.op = ReduceOp::kMin;
  options.process_set = process_set;
  allreduce_(failing, name + ".failing_rank", options);
  const int64_t first = failing.item<int64_t>();
  if (first == none) return "";
  std::string message = broadcast_bytes(local_error, static_cast<int>(first), name + ".error", process_set);
  return message.empty() ? "unknown error on rank " + std::to_string(first) : message;
}

void restore_checkpoint(const std::string& path, const CheckpointContents& contents, int root_rank,
                        const ProcessSet& process_set, const std::string& name) {
  // One broadcast: a tag byte, then the file ('C') or root's error ('E').
  std::string message;
  if (chorus::rank() == root_rank) {
    try {
      message = "C" + read_whole_file(path, "checkpoint");
    } catch (const std::exception& e) {
      message = std::string("E") + e.what();
    }
  }
  message = broadcast_bytes(message, root_rank, name + ".bytes", process_set);
  if (message.empty() || message[0] != 'C') throw Error(Status::InvalidArgument(message.empty() ? "restore_checkpoint: nothing received" : message.substr(1)));
  std::string error;
  try {
    decode_checkpoint(message.substr(1), "Checkpoint '" + path + "'", contents);
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  }
  error = agree_on_error(error, name, process_set);
  if (!error.empty()) throw Error(Status::InvalidArgument(error));
}

}  // namespace torch
}  // namespace chorus
