// Broadcast of parameters and optimizer state, and small agreed values.
#include "chorus/torch/state_broadcast.h"

#include <cstring>
#include <typeinfo>

#include <c10/util/Type.h>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include "chorus/torch/ops.h"
#include "tensor_adapter.h"

namespace chorus {
namespace torch {
namespace {

std::string sizes_to_string(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

std::vector<int64_t> group_sizes(const ::torch::optim::Optimizer& optimizer) {
  std::vector<int64_t> sizes;
  for (const auto& group : optimizer.param_groups()) {
    sizes.push_back(static_cast<int64_t>(group.params().size()));
  }
  return sizes;
}

// Root's optimizer as bytes: its own save() (per-parameter state, keyed by
// parameter position on load) plus every group's options, which 1.13's
// Optimizer::load reads but never applies.
std::string serialize_optimizer(const ::torch::optim::Optimizer& optimizer) {
  ::torch::serialize::OutputArchive archive;
  archive.write("optimizer_type", c10::IValue(c10::demangle(typeid(optimizer).name())));
  ::torch::serialize::OutputArchive saved(archive.compilation_unit());
  optimizer.save(saved);
  archive.write("optimizer", saved);
  const auto& groups = optimizer.param_groups();
  archive.write("group_sizes", ::torch::tensor(group_sizes(optimizer)));
  for (size_t i = 0; i < groups.size(); ++i) {
    ::torch::serialize::OutputArchive options(archive.compilation_unit());
    groups[i].options().serialize(options);
    archive.write("group_options/" + std::to_string(i), options);
  }
  std::string bytes;
  archive.save_to([&bytes](const void* data, size_t size) -> size_t {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  return bytes;
}

// Throws chorus::Error when this rank's optimizer cannot take root's state.
void check_same_structure(::torch::serialize::InputArchive& archive,
                          const ::torch::optim::Optimizer& optimizer, int rank, int root_rank) {
  c10::IValue type;
  archive.read("optimizer_type", type);
  const std::string here = c10::demangle(typeid(optimizer).name());
  const std::string where = "broadcast_optimizer_state: rank " + std::to_string(rank);
  if (type.toStringRef() != here) {
    throw Error(Status::Mismatch(where + " has an optimizer of type " + here + ", root rank " +
                                 std::to_string(root_rank) + " one of type " + type.toStringRef() +
                                 "; expected the same optimizer class on every rank"));
  }
  ::torch::Tensor sizes_tensor;
  archive.read("group_sizes", sizes_tensor);
  std::vector<int64_t> root_sizes(sizes_tensor.data_ptr<int64_t>(),
                                  sizes_tensor.data_ptr<int64_t>() + sizes_tensor.numel());
  const std::vector<int64_t> sizes = group_sizes(optimizer);
  if (sizes != root_sizes) {
    throw Error(Status::Mismatch(
        where + "'s optimizer has parameter groups of sizes " + sizes_to_string(sizes) +
        ", root rank " + std::to_string(root_rank) + "'s has " + sizes_to_string(root_sizes) +
        "; expected optimizers built over the same model on every rank"));
  }
}

void load_optimizer(::torch::optim::Optimizer& optimizer, const std::string& bytes, int rank,
                    int root_rank) {
  ::torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  check_same_structure(archive, optimizer, rank, root_rank);
  ::torch::serialize::InputArchive saved;
  archive.read("optimizer", saved);
  // load() only adds or replaces the entries root has (matching parameters
  // by their position in each group) and leaves the others' alone, so a
  // parameter root has no state for would keep this rank's state: start
  // empty. This is also why Horovod's trick of first building a state (one
  // step on zero gradients) is not needed here: the whole state travels,
  // whatever root's holds, and an empty one on root empties everyone's.
  optimizer.state().clear();
  optimizer.load(saved);
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    ::torch::serialize::InputArchive options;
    archive.read("group_options/" + std::to_string(i), options);
    groups[i].options().serialize(options);
  }
}

// The state travels as bytes in host memory, but it is the state of
// parameters on these devices: a device this build cannot serve is refused as
// broadcast_parameters and DistributedOptimizer refuse it, on every rank and
// before the collective.
void check_parameter_devices(const ::torch::optim::Optimizer& optimizer) {
  const auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!params[i].defined()) continue;
      detail::check_device(params[i], "broadcast_optimizer_state.param_groups[" +
                                          std::to_string(g) + "].params[" + std::to_string(i) +
                                          "]");
    }
  }
}

::torch::Tensor scalar_tensor(double value) {
  return ::torch::full({1}, value, ::torch::TensorOptions().dtype(::torch::kFloat64));
}

}  // namespace

void broadcast_parameters(const ::torch::nn::Module& module, int root_rank, const ProcessSet& process_set) {
  ::torch::OrderedDict<std::string, ::torch::Tensor> tensors;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    tensors.insert("parameter." + item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    tensors.insert("buffer." + item.key(), item.value());
  }
  broadcast_parameters(tensors, root_rank, process_set);
}

void broadcast_parameters(const ::torch::OrderedDict<std::string, ::torch::Tensor>& tensors,
                          int root_rank, const ProcessSet& process_set) {
  ::torch::NoGradGuard no_grad;
  std::vector<std::string> names;
  // Check every tensor before submitting any: a rank that stopped halfway
  // would leave the others waiting for the rest.
  for (const auto& item : tensors) {
    names.push_back("broadcast_parameters." + item.key());
    if (item.value().defined()) detail::check_writable(item.value(), names.back());
  }
  // All submitted before any wait, so the runtime negotiates them together.
  std::vector<TorchHandle> handles;
  size_t i = 0;
  for (const auto& item : tensors) {
    const std::string& name = names[i++];
    if (!item.value().defined()) continue;
    handles.push_back(broadcast_async_(item.value(), root_rank, name, process_set));
  }
  // Wait for all (their memory is in use until done), then report the first
  // failure.
  std::string first_error;
  StatusCode first_code = StatusCode::kOk;
  for (const TorchHandle& handle : handles) {
    try {
      handle.wait();
    } catch (const Error& e) {
      if (first_code == StatusCode::kOk) {
        first_code = e.code();
        first_error = e.what();
      }
    }
  }
  if (first_code != StatusCode::kOk) throw Error(Status(first_code, first_error));
}

void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root_rank,
                               const ProcessSet& process_set) {
  // Asked once, before the collective: loading needs no runtime, which root
  // may already be shutting down.
  const int rank = chorus::rank();
  const bool is_root = rank == root_rank;
  check_parameter_devices(optimizer);
  const std::string bytes = broadcast_bytes(is_root ? serialize_optimizer(optimizer) : std::string(),
                                            root_rank, "broadcast_optimizer_state", process_set);
  if (is_root) return;
  try {
    load_optimizer(optimizer, bytes, rank, root_rank);
  } catch (const c10::Error& e) {
    throw Error(Status::Internal("broadcast_optimizer_state: rank " + std::to_string(rank) +
                                 " could not load root rank " +
                                 std::to_string(root_rank) + "'s optimizer state: " +
                                 e.what_without_backtrace()));
  }
}

double allreduce_metric(double value, const std::string& name, ReduceOp op) {
  ::torch::Tensor tensor = scalar_tensor(value);
  AllreduceOptions options;
  options.op = op;
  allreduce_(tensor, name, options);
  return tensor.item<double>();
}

int64_t broadcast_scalar(int64_t value, int root_rank, const std::string& name,
                         const ProcessSet& process_set) {
  ::torch::Tensor tensor = ::torch::full({1}, value, ::torch::TensorOptions().dtype(::torch::kInt64));
  broadcast_(tensor, root_rank, name, process_set);
  return tensor.item<int64_t>();
}

double broadcast_scalar(double value, int root_rank, const std::string& name,
                        const ProcessSet& process_set) {
  ::torch::Tensor tensor = scalar_tensor(value);
  broadcast_(tensor, root_rank, name, process_set);
  return tensor.item<double>();
}

std::string broadcast_bytes(const std::string& bytes, int root_rank, const std::string& name,
                            const ProcessSet& process_set) {
  const bool is_root = chorus::rank() == root_rank;
  // Only root knows the length: it goes first, so every rank can allocate.
  const int64_t length = broadcast_scalar(is_root ? static_cast<int64_t>(bytes.size()) : int64_t{0},
                                          root_rank, name + ".length", process_set);
  if (length == 0) return std::string();
  ::torch::Tensor buffer = ::torch::empty({length}, ::torch::TensorOptions().dtype(::torch::kUInt8));
  if (is_root) std::memcpy(buffer.data_ptr(), bytes.data(), bytes.size());
  broadcast_(buffer, root_rank, name + ".bytes", process_set);
  return std::string(static_cast<const char*>(buffer.data_ptr()), static_cast<size_t>(length));
}

}  // namespace torch
}  // namespace chorus
