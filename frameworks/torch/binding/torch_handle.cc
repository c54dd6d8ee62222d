// TorchHandle and PendingOp: waiting for a collective on torch tensors and
// handing its results back.
#include <utility>

#include <torch/utils.h>

#include "chorus/torch/ops.h"
#include "cuda_streams.h"
#include "pending_op.h"

namespace chorus {
namespace torch {
namespace detail {

void PendingOp::await() const {
  // The tensor whose device the op runs on: inputs exist for every op that
  // has tensors at all (join and barrier have none and wait on the host).
  ::torch::Tensor on_device = inputs.empty() ? ::torch::Tensor() : inputs.front();
  auto in_use = [this] {
    std::vector<::torch::Tensor> tensors = inputs;
    tensors.insert(tensors.end(), outputs.begin(), outputs.end());
    for (const auto& output : allocated) tensors.push_back(output->tensor);
    return tensors;
  };
  if (await_result(handle, on_device, in_use)) {
    std::lock_guard<std::mutex> lock(mutex_);
    awaited_on_stream_ = true;
  }
}

bool PendingOp::awaited_on_stream() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return awaited_on_stream_;
}

std::vector<::torch::Tensor> PendingOp::results() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<::torch::Tensor> out = outputs;
  if (!allocated.empty()) {
    out.clear();
    for (const auto& output : allocated) out.push_back(output->tensor);
  }
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
  pending.await();
  const std::vector<::torch::Tensor> results = pending.results();
  return results.empty() ? ::torch::Tensor() : results.front();
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
  // After wait() on CUDA tensors the results are usable on the caller's
  // stream though the host may not have seen the collective end.
  if (!pending.awaited_on_stream()) throw_if_error(pending.handle.status());
  return pending.results();
}

std::vector<int64_t> TorchHandle::received_splits() const {
  const detail::PendingOp& pending = op();
  // Host-side numbers: after a wait() left to a CUDA stream, the host waits
  // for the collective here.
  if (pending.awaited_on_stream()) pending.handle.wait();
  return pending.handle.received_splits();
}

const chorus::Handle& TorchHandle::handle() const { return op().handle; }

}  // namespace torch
}  // namespace chorus
