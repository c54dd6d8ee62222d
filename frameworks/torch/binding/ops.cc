// Collectives on torch tensors: each op checks its tensors, gives the
// runtime views of contiguous memory (the caller's own when possible) and
// returns a TorchHandle that keeps every tensor alive until done.
#include <utility>

#include "chorus/torch/ops.h"
#include "pending_op.h"
#include "tensor_adapter.h"

namespace chorus {
namespace torch {
namespace {

using detail::PendingOp;

std::shared_ptr<PendingOp> new_op(const std::string& name) {
  auto op = std::make_shared<PendingOp>();
  op->name = name;
  return op;
}

// Sets up one reduction or broadcast member: the contiguous input and where
// the result goes. In place, the result goes into the caller's tensor
// directly when it is contiguous; otherwise into the contiguous copy, which
// wait() copies back. Out of place, into a new tensor.
void add_member(PendingOp& op, const ::torch::Tensor& tensor, const std::string& name,
                bool in_place) {
  if (in_place) detail::check_writable(tensor, name);
  else detail::check_usable(tensor, name);
  ::torch::Tensor input = detail::contiguous(tensor);
  op.inputs.push_back(input);
  if (in_place) {
    op.outputs.push_back(input);
    op.copy_back.push_back(input.is_same(tensor) ? ::torch::Tensor() : tensor);
  } else {
    op.outputs.push_back(detail::empty_like_contiguous(input));
    op.copy_back.emplace_back();
  }
}

TorchHandle allreduce_impl(const ::torch::Tensor& tensor, const std::string& name,
                           const AllreduceOptions& options, bool in_place) {
  auto op = new_op(name);
  add_member(*op, tensor, name, in_place);
  op->handle = chorus::allreduce_async(name, detail::view_of(op->inputs[0], name),
                                       detail::view_of(op->outputs[0], name), options);
  return TorchHandle(std::move(op));
}

TorchHandle grouped_allreduce_impl(const std::vector<::torch::Tensor>& tensors,
                                   const std::string& name, const AllreduceOptions& options,
                                   bool in_place) {
  auto op = new_op(name);
  std::vector<chorus::Tensor> inputs, outputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    // The runtime names member i this way too.
    const std::string member = name + "." + std::to_string(i);
    add_member(*op, tensors[i], member, in_place);
    inputs.push_back(detail::view_of(op->inputs[i], member));
    outputs.push_back(detail::view_of(op->outputs[i], member));
  }
  op->handle = chorus::grouped_allreduce_async(name, inputs, outputs, options);
  return TorchHandle(std::move(op));
}

TorchHandle broadcast_impl(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                           bool in_place, const ProcessSet& process_set) {
  auto op = new_op(name);
  if (in_place) {
    add_member(*op, tensor, name, true);
  } else {
    detail::check_usable(tensor, name);
    // The runtime broadcasts in place: root sends a copy of its tensor, the
    // others receive into fresh memory (their values are overwritten).
    ::torch::Tensor buffer = detail::empty_like_contiguous(tensor);
    if (chorus::rank() == root_rank) buffer.copy_(tensor.detach());
    op->inputs.push_back(tensor);
    op->outputs.push_back(buffer);
    op->copy_back.emplace_back();
  }
  op->handle = chorus::broadcast_async(name, detail::view_of(op->outputs[0], name), root_rank, process_set);
  return TorchHandle(std::move(op));
}

// Ops whose output the runtime allocates: the input is read as is.
std::shared_ptr<PendingOp> allocating_op(const ::torch::Tensor& tensor, const std::string& name) {
  detail::check_usable(tensor, name);
  auto op = new_op(name);
  op->inputs.push_back(detail::contiguous(tensor));
  op->allocated.push_back(std::make_shared<detail::AllocatedOutput>());
  return op;
}

// A group of ops whose outputs the runtime allocates: member i (named as the
// runtime names it) gets its own contiguous input and allocator.
std::shared_ptr<PendingOp> allocating_group(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                            std::vector<chorus::Tensor>* inputs,
                                            std::vector<OutputAllocator>* allocators) {
  auto op = new_op(name);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string member = name + "." + std::to_string(i);
    detail::check_usable(tensors[i], member);
    op->inputs.push_back(detail::contiguous(tensors[i]));
    op->allocated.push_back(std::make_shared<detail::AllocatedOutput>());
    inputs->push_back(detail::view_of(op->inputs.back(), member));
    allocators->push_back(detail::torch_allocator(op->allocated.back()));
  }
  return op;
}

}  // namespace

TorchHandle allreduce_async(const ::torch::Tensor& tensor, const std::string& name,
                            const AllreduceOptions& options) {
  return allreduce_impl(tensor, name, options, false);
}

TorchHandle allreduce_async_(const ::torch::Tensor& tensor, const std::string& name,
                             const AllreduceOptions& options) {
  return allreduce_impl(tensor, name, options, true);
}

::torch::Tensor allreduce(const ::torch::Tensor& tensor, const std::string& name,
                          const AllreduceOptions& options) {
  return allreduce_async(tensor, name, options).wait();
}

void allreduce_(const ::torch::Tensor& tensor, const std::string& name,
                const AllreduceOptions& options) {
  allreduce_async_(tensor, name, options).wait();
}

TorchHandle grouped_allreduce_async(const std::vector<::torch::Tensor>& tensors,
                                    const std::string& name, const AllreduceOptions& options) {
  return grouped_allreduce_impl(tensors, name, options, false);
}

TorchHandle grouped_allreduce_async_(const std::vector<::torch::Tensor>& tensors,
                                     const std::string& name, const AllreduceOptions& options) {
  return grouped_allreduce_impl(tensors, name, options, true);
}

std::vector<::torch::Tensor> grouped_allreduce(const std::vector<::torch::Tensor>& tensors,
                                               const std::string& name,
                                               const AllreduceOptions& options) {
  TorchHandle handle = grouped_allreduce_async(tensors, name, options);
  handle.wait();
  return handle.outputs();
}

void grouped_allreduce_(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                        const AllreduceOptions& options) {
  grouped_allreduce_async_(tensors, name, options).wait();
}

TorchHandle allgather_async(const ::torch::Tensor& tensor, const std::string& name,
                            const ProcessSet& process_set) {
  auto op = allocating_op(tensor, name);
  op->handle = chorus::allgather_async(name, detail::view_of(op->inputs[0], name),
                                       detail::torch_allocator(op->allocated.front()), process_set);
  return TorchHandle(std::move(op));
}

::torch::Tensor allgather(const ::torch::Tensor& tensor, const std::string& name,
                          const ProcessSet& process_set) {
  return allgather_async(tensor, name, process_set).wait();
}

TorchHandle broadcast_async(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                            const ProcessSet& process_set) {
  return broadcast_impl(tensor, root_rank, name, false, process_set);
}

TorchHandle broadcast_async_(const ::torch::Tensor& tensor, int root_rank,
                             const std::string& name, const ProcessSet& process_set) {
  return broadcast_impl(tensor, root_rank, name, true, process_set);
}

::torch::Tensor broadcast(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                          const ProcessSet& process_set) {
  return broadcast_async(tensor, root_rank, name, process_set).wait();
}

void broadcast_(const ::torch::Tensor& tensor, int root_rank, const std::string& name,
                const ProcessSet& process_set) {
  broadcast_async_(tensor, root_rank, name, process_set).wait();
}

TorchHandle alltoall_async(const ::torch::Tensor& tensor, const std::string& name,
                           const std::vector<int64_t>& splits, const ProcessSet& process_set) {
  auto op = allocating_op(tensor, name);
  op->handle = chorus::alltoall_async(name, detail::view_of(op->inputs[0], name), splits,
                                      detail::torch_allocator(op->allocated.front()), process_set);
  return TorchHandle(std::move(op));
}

std::pair<::torch::Tensor, ::torch::Tensor> alltoall(const ::torch::Tensor& tensor,
                                                     const std::string& name,
                                                     const std::vector<int64_t>& splits,
                                                     const ProcessSet& process_set) {
  TorchHandle handle = alltoall_async(tensor, name, splits, process_set);
  ::torch::Tensor output = handle.wait();
  const std::vector<int64_t> received = handle.received_splits();
  ::torch::Tensor received_tensor =
      ::torch::tensor(received, ::torch::TensorOptions().dtype(::torch::kInt64));
  return {output, received_tensor};
}

TorchHandle reducescatter_async(const ::torch::Tensor& tensor, const std::string& name,
                                ReduceOp op, const ProcessSet& process_set) {
  ReducescatterOptions options;
  options.op = op;
  options.process_set = process_set;
  return reducescatter_async(tensor, name, options);
}

TorchHandle reducescatter_async(const ::torch::Tensor& tensor, const std::string& name,
                                const ReducescatterOptions& options) {
  auto pending = allocating_op(tensor, name);
  pending->handle = chorus::reducescatter_async(name, detail::view_of(pending->inputs[0], name), options,
                                                detail::torch_allocator(pending->allocated.front()));
  return TorchHandle(std::move(pending));
}

::torch::Tensor reducescatter(const ::torch::Tensor& tensor, const std::string& name,
                              ReduceOp op, const ProcessSet& process_set) {
  return reducescatter_async(tensor, name, op, process_set).wait();
}

::torch::Tensor reducescatter(const ::torch::Tensor& tensor, const std::string& name,
                              const ReducescatterOptions& options) {
  return reducescatter_async(tensor, name, options).wait();
}

TorchHandle grouped_allgather_async(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                    const ProcessSet& process_set) {
  std::vector<chorus::Tensor> inputs;
  std::vector<OutputAllocator> allocators;
  auto op = allocating_group(tensors, name, &inputs, &allocators);
  op->handle = chorus::grouped_allgather_async(name, inputs, allocators, process_set);
  return TorchHandle(std::move(op));
}

std::vector<::torch::Tensor> grouped_allgather(const std::vector<::torch::Tensor>& tensors,
                                               const std::string& name, const ProcessSet& process_set) {
  TorchHandle handle = grouped_allgather_async(tensors, name, process_set);
  handle.wait();
  return handle.outputs();
}

TorchHandle grouped_reducescatter_async(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                        ReduceOp op, const ProcessSet& process_set) {
  ReducescatterOptions options;
  options.op = op;
  options.process_set = process_set;
  return grouped_reducescatter_async(tensors, name, options);
}

TorchHandle grouped_reducescatter_async(const std::vector<::torch::Tensor>& tensors, const std::string& name,
                                        const ReducescatterOptions& options) {
  std::vector<chorus::Tensor> inputs;
  std::vector<OutputAllocator> allocators;
  auto pending = allocating_group(tensors, name, &inputs, &allocators);
  pending->handle = chorus::grouped_reducescatter_async(name, inputs, options, allocators);
  return TorchHandle(std::move(pending));
}

std::vector<::torch::Tensor> grouped_reducescatter(const std::vector<::torch::Tensor>& tensors,
                                                   const std::string& name, ReduceOp op,
                                                   const ProcessSet& process_set) {
  TorchHandle handle = grouped_reducescatter_async(tensors, name, op, process_set);
  handle.wait();
  return handle.outputs();
}

std::vector<::torch::Tensor> grouped_reducescatter(const std::vector<::torch::Tensor>& tensors,
                                                   const std::string& name, const ReducescatterOptions& options) {
  TorchHandle handle = grouped_reducescatter_async(tensors, name, options);
  handle.wait();
  return handle.outputs();
}

int join() { return chorus::join(); }

void barrier(const ProcessSet& process_set) { chorus::barrier(process_set); }

void start_timeline(const std::string& path, bool mark_cycles) { chorus::start_timeline(path, mark_cycles); }

void stop_timeline() { chorus::stop_timeline(); }
}  // namespace torch
}  // namespace chorus
