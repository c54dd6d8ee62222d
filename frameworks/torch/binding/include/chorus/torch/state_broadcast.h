// Making every rank start from the same state, and agreeing on metrics.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>

#include "chorus/chorus.h"

namespace chorus {
namespace torch {

// Overwrites every parameter and buffer of `module` (or the given named
// tensors) with root_rank's values, in place. Names must be the same on every
// rank; a rank whose shapes differ fails with an error naming the tensor.
// Every tensor is checked before any is submitted: one the torch ops would
// refuse (e.g. on a device this build does not support) fails with their
// message, under the name "broadcast_parameters.<parameter|buffer>.<name>".
// With a process set: among its members only (root_rank is a rank of the
// job in the set), e.g. within one pipeline stage's data-parallel set.
void broadcast_parameters(const ::torch::nn::Module& module, int root_rank,
                          const ProcessSet& process_set = {});
void broadcast_parameters(const ::torch::OrderedDict<std::string, ::torch::Tensor>& tensors,
                          int root_rank, const ProcessSet& process_set = {});

// Makes `optimizer` on every rank identical to root_rank's: per-parameter
// state (Adam's moments and step counts, momentum buffers, ...) and every
// parameter group's options, the learning rate included. Works whether or not
// the optimizers have taken a step yet: a rank whose state is empty receives
// root_rank's state, and an empty state on root_rank clears the others'.
// Parameters are matched by position within their group, so the optimizers
// must be built over the same model on every rank. A parameter on a device
// this build does not support is refused before the collective, with the
// torch ops' message, under the name
// "broadcast_optimizer_state.param_groups[<g>].params[<i>]".
void broadcast_optimizer_state(::torch::optim::Optimizer& optimizer, int root_rank,
                               const ProcessSet& process_set = {});

// Reduces a scalar across ranks (default: the average), e.g. a loss or an
// accuracy for logging and early stopping. Every rank must call it with the
// same name.
double allreduce_metric(double value, const std::string& name,
                        ReduceOp op = ReduceOp::kAverage);
// Broadcasts a small value (an epoch number, a flag) from root_rank.
int64_t broadcast_scalar(int64_t value, int root_rank, const std::string& name,
                         const ProcessSet& process_set = {});
double broadcast_scalar(double value, int root_rank, const std::string& name,
                        const ProcessSet& process_set = {});
// Broadcasts raw bytes (a serialized object) of any length from root_rank.
std::string broadcast_bytes(const std::string& bytes, int root_rank, const std::string& name,
                            const ProcessSet& process_set = {});

}  // namespace torch
}  // namespace chorus
