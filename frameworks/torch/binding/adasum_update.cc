#include "adasum_update.h"

#include <torch/torch.h>

#include <utility>

#include "tensor_adapter.h"

namespace chorus {
namespace torch {
namespace {

// The delta travels in 16 bits with compression (for float32 and float64
// parameters, as gradients do); Adasum computes in float32 either way.
c10::ScalarType wire_type(Compression compression, c10::ScalarType type) {
  if (compression == Compression::kNone || (type != c10::ScalarType::Float && type != c10::ScalarType::Double)) {
    return type;
  }
  return compression == Compression::kFP16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
}

// `buffer`, reallocated when it no longer fits `like` in `type`.
void fit(::torch::Tensor& buffer, const ::torch::Tensor& like, c10::ScalarType type) {
  if (!buffer.defined() || buffer.sizes() != like.sizes() || buffer.device() != like.device() ||
      buffer.scalar_type() != type) {
    buffer = detail::empty_like_contiguous(like, type);
  }
}

}  // namespace

AdasumUpdate::AdasumUpdate(std::vector<ReducedParameter> parameters, const DistributedOptimizerOptions& options)
    : parameters_(std::move(parameters)),
      compression_(options.compression),
      process_set_(options.process_set),
      starts_(parameters_.size()),
      deltas_(parameters_.size()) {}

void AdasumUpdate::step(::torch::optim::Optimizer& optimizer) {
  if (chorus::process_set_size(process_set_) == 1) {
    optimizer.step();
    return;
  }
  ::torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const ::torch::Tensor& param = parameters_[i].param;
    // Checked at construction, but it may have been moved since.
    detail::check_usable(param, parameters_[i].name);
    fit(starts_[i], param, param.scalar_type());
    starts_[i].copy_(param);
  }
  optimizer.step();

  AllreduceOptions options;
  options.op = ReduceOp::kAdasum;
  options.process_set = process_set_;
  std::vector<Handle> handles;
  Status first;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const ::torch::Tensor& param = parameters_[i].param;
    fit(deltas_[i], param, wire_type(compression_, param.scalar_type()));
    deltas_[i].copy_(param - starts_[i]);
    try {
      handles.push_back(chorus::allreduce_async(parameters_[i].name,
                                                detail::view_of(deltas_[i], parameters_[i].name), options));
      ++allreduces_submitted_;
    } catch (const Error& e) {
      if (first.ok()) first = Status(e.code(), e.what());
    }
  }
  // Every submitted delta is waited for: the runtime writes into them.
  for (const Handle& handle : handles) {
    try {
      handle.wait();
    } catch (const Error& e) {
      if (first.ok()) first = Status(e.code(), e.what());
    }
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    // On failure every parameter goes back to where it started: the local
    // step alone would leave the ranks' models apart.
    if (first.ok()) {
      parameters_[i].param.copy_(starts_[i]).add_(deltas_[i]);
    } else {
      parameters_[i].param.copy_(starts_[i]);
    }
  }
  throw_if_error(first);
}

}  // namespace torch
}  // namespace chorus
