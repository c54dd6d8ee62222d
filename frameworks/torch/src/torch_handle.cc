// TorchHandle and PendingOp: waiting for a collective on torch tensors and
// handing its results back.
#include <utility>

#include <torch/utils.h>

#include "chorus/torch/ops.h"
#include "pending_op.h"

namespace chorus {
namespace torch {
namespace detail {

std::vector<::torch::Tensor> PendingOp::results() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<::torch::Tensor> out = outputs;
  if (allocated) out.assign(1, allocated->tensor);
  for (size_t i = 0; i < copy_back.size(); ++i) {
    if (!copy_back[i].defined()) continue;
    if (!finished_) {
      // An in-place op overwrites the caller's values, also for parameters
      // that require grad: this is data movement, not a differentiable op.
      ::torch::NoGradGuard no_grad;
      copy_back[i].copy_(outputs[i]);
    }
    out[i] = copy_back[i];
  }
  finished_ = true;
  return out;
}

}  // namespace detail

const detail::PendingOp& TorchHandle::op() const {
  if (!op_) {
    throw Error(Status::PreconditionFailed(
        "this TorchHandle is empty (default-constructed); expected one returned by a chorus::torch "
        "*_async call"));
  }
  return *op_;
}

const std::string& TorchHandle::name() const { return op().name; }

::torch::Tensor TorchHandle::wait() const {
  const detail::PendingOp& pending = op();
  pending.handle.wait();
  return pending.results().front();
}

bool TorchHandle::wait_for(std::chrono::milliseconds timeout) const {
  const detail::PendingOp& pending = op();
  if (!pending.handle.wait_for(timeout)) return false;
  (void)pending.results();
  return true;
}

bool TorchHandle::test() const {
  const detail::PendingOp& pending = op();
  if (!pending.handle.test()) return false;
  // Done: make an in-place result visible in the caller's tensor now, so
  // polling callers need not also call wait().
  if (pending.handle.status().ok()) (void)pending.results();
  return true;
}

Status TorchHandle::status() const { return op().handle.status(); }

std::vector<::torch::Tensor> TorchHandle::outputs() const {
  const detail::PendingOp& pending = op();
  // Not done yet (kInProgress) or failed: the runtime's status as an error.
  throw_if_error(pending.handle.status());
  return pending.results();
}

std::vector<int64_t> TorchHandle::received_splits() const { return op().handle.received_splits(); }

const chorus::Handle& TorchHandle::handle() const { return op().handle; }

}  // namespace torch
}  // namespace chorus
