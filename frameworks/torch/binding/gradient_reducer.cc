#include "gradient_reducer.h"

#include <torch/torch.h>

#include <algorithm>
#include <utility>

#include "chorus/torch/ops.h"
#include "cuda_streams.h"
#include "tensor_adapter.h"

namespace chorus {
namespace torch {
namespace {

c10::ScalarType wire_type(Compression compression) {
  return compression == Compression::kFP16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
}

// 16-bit compression only pays for wider types; a float16 or bfloat16
// gradient goes as it is.
bool compresses(Compression compression, c10::ScalarType grad_type) {
  return compression != Compression::kNone &&
         (grad_type == c10::ScalarType::Float || grad_type == c10::ScalarType::Double);
}

}  // namespace

GradientReducer::GradientReducer(std::vector<ReducedParameter> parameters,
                                 const DistributedOptimizerOptions& options)
    : parameters_(std::move(parameters)),
      compression_(options.compression),
      backward_passes_per_step_(options.backward_passes_per_step),
      gradient_predivide_factor_(options.gradient_predivide_factor),
      op_(options.op),
      process_set_(options.process_set),
      passes_(parameters_.size(), 0),
      submitted_(parameters_.size(), false),
      wire_buffers_(parameters_.size()) {}

GradientReducer::~GradientReducer() {
  // The runtime may still write into gradients and wire buffers; wait (and
  // drop errors: a destructor cannot report them) before they are freed.
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& flight : in_flight_) {
    try {
      flight.handle.wait();
    } catch (const std::exception&) {
    }
  }
}

void GradientReducer::gradient_ready(size_t index) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (submitted_[index]) {
    if (first_error_.ok()) {
      first_error_ = Status::PreconditionFailed(
          "DistributedOptimizer: the gradient of '" + parameters_[index].name +
          "' was computed again while its allreduce was in flight: more than "
          "backward_passes_per_step=" +
          std::to_string(backward_passes_per_step_) +
          " backward passes before step() or synchronize(); expected at most that many (raise "
          "backward_passes_per_step to accumulate more passes locally)");
    }
    return;
  }
  if (++passes_[index] < backward_passes_per_step_) return;
  Status status = submit_locked(index);
  if (!status.ok() && first_error_.ok()) first_error_ = std::move(status);
}

::torch::Tensor GradientReducer::wire_buffer_locked(size_t index, const ::torch::Tensor& grad) {
  ::torch::Tensor& buffer = wire_buffers_[index];
  // Allocated once and reused every step: fresh memory is expensive to
  // touch, and the runtime only needs it to stay put until synchronize().
  if (!buffer.defined() || buffer.sizes() != grad.sizes() || buffer.device() != grad.device()) {
    buffer = detail::empty_like_contiguous(grad, wire_type(compression_));
  }
  buffer.copy_(grad);
  return buffer;
}

Status GradientReducer::submit_locked(size_t index) {
  const ReducedParameter& parameter = parameters_[index];
  try {
    ::torch::NoGradGuard no_grad;
    ::torch::Tensor grad = parameter.param.grad();
    if (grad.defined() && grad.is_sparse()) {
      return Status::InvalidArgument("DistributedOptimizer: the gradient of '" + parameter.name +
                                     "' is sparse; expected a dense gradient");
    }
    // Before anything is allocated, replaced or submitted: a refused
    // gradient leaves .grad, the wire buffer and the in-flight list as they
    // were. The parameter was checked at construction, but it may have been
    // moved since (Module::to) or been given a .grad on another device.
    detail::check_usable(grad.defined() ? grad : parameter.param, parameter.name);
    if (!grad.defined()) {
      // No gradient reached this parameter on this rank (e.g. a branch of
      // the model it did not use); the others may have one, and every rank
      // must submit the same names.
      grad = ::torch::zeros_like(parameter.param, ::torch::MemoryFormat::Contiguous);
      parameter.param.mutable_grad() = grad;
    } else if (!grad.is_contiguous()) {
      grad = grad.contiguous();
      parameter.param.mutable_grad() = grad;
    }
    ::torch::Tensor wire =
        compresses(compression_, grad.scalar_type()) ? wire_buffer_locked(index, grad) : grad;

    AllreduceOptions options;
    options.op = op_;
    options.process_set = process_set_;
    if (op_ == ReduceOp::kAverage && gradient_predivide_factor_ != 1.0) {
      // Horovod's split of the average: divide by f before the sum (keeps
      // 16-bit sums in range) and by size / f after it.
      options.op = ReduceOp::kSum;
      options.prescale_factor = 1.0 / gradient_predivide_factor_;
      options.postscale_factor =
          gradient_predivide_factor_ / static_cast<double>(chorus::process_set_size(process_set_));
    }
    Handle handle =
        allreduce_async(parameter.name, detail::view_of(wire, parameter.name), options);
    in_flight_.push_back({std::move(handle), std::move(grad), std::move(wire)});
    submitted_[index] = true;
    ++allreduces_submitted_;
    return Status::OK();
  } catch (const Error& e) {
    return Status(e.code(), e.what());
  } catch (const std::exception& e) {
    return Status::Internal("DistributedOptimizer: submitting the gradient of '" +
                            parameter.name + "' failed: " + e.what());
  }
}

Status GradientReducer::finish_locked() {
  Status first;
  for (auto& flight : in_flight_) {
    try {
      // CUDA gradients: the optimizer's stream waits for the allreduce, not
      // this thread.
      detail::await_result(flight.handle, flight.grad,
                           [&flight] { return std::vector<::torch::Tensor>{flight.grad, flight.wire}; });
      if (!flight.wire.is_same(flight.grad)) {
        ::torch::NoGradGuard no_grad;
        flight.grad.copy_(flight.wire);
      }
    } catch (const Error& e) {
      if (first.ok()) first = Status(e.code(), e.what());
    } catch (const std::exception& e) {
      if (first.ok()) {
        first = Status::Internal("DistributedOptimizer: writing back the gradient of '" +
                                 flight.handle.name() + "' failed: " + e.what());
      }
    }
  }
  in_flight_.clear();
  std::fill(passes_.begin(), passes_.end(), 0);
  std::fill(submitted_.begin(), submitted_.end(), false);
  return first;
}

void GradientReducer::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  Status status = first_error_;
  first_error_ = Status::OK();
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (submitted_[i]) continue;
    Status submitted = submit_locked(i);
    if (status.ok()) status = std::move(submitted);
  }
  Status finished = finish_locked();
  if (status.ok()) status = std::move(finished);
  throw_if_error(status);
}

Status GradientReducer::check_idle(const std::string& action) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (in_flight_.empty()) return Status::OK();
  return Status::PreconditionFailed(
      "DistributedOptimizer: " + action + " called while " + std::to_string(in_flight_.size()) +
      " gradient allreduce(s) are in flight (e.g. '" + in_flight_.front().handle.name() +
      "'); expected synchronize() or step() first");
}

int64_t GradientReducer::allreduces_submitted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allreduces_submitted_;
}

}  // namespace torch
}  // namespace chorus
