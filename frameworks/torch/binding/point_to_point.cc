// Point-to-point on torch tensors: views of contiguous memory for the
// runtime, the tensors kept alive by the PendingOp (pending_op.h).
#include "chorus/torch/point_to_point.h"

#include <memory>
#include <utility>

#include "pending_op.h"
#include "tensor_adapter.h"

namespace chorus {
namespace torch {

TorchHandle send_async(const ::torch::Tensor& tensor, int dest_rank, const std::string& name) {
  detail::check_usable(tensor, name);
  auto op = std::make_shared<detail::PendingOp>();
  op->name = name;
  ::torch::Tensor input = detail::contiguous(tensor);
  op->inputs.push_back(input);
  // The caller's tensor is what wait() returns; nothing is copied back.
  op->outputs.push_back(tensor);
  op->copy_back.emplace_back();
  op->handle = chorus::send_async(name, detail::view_of(input, name), dest_rank);
  return TorchHandle(std::move(op));
}

TorchHandle recv_async(const ::torch::Tensor& into, int source_rank, const std::string& name) {
  detail::check_writable(into, name);
  auto op = std::make_shared<detail::PendingOp>();
  op->name = name;
  ::torch::Tensor buffer = detail::contiguous(into);
  op->inputs.push_back(buffer);
  op->outputs.push_back(buffer);
  op->copy_back.push_back(buffer.is_same(into) ? ::torch::Tensor() : into);
  op->handle = chorus::recv_async(name, detail::view_of(buffer, name), source_rank);
  return TorchHandle(std::move(op));
}

void send(const ::torch::Tensor& tensor, int dest_rank, const std::string& name) {
  send_async(tensor, dest_rank, name).wait();
}

void recv(const ::torch::Tensor& into, int source_rank, const std::string& name) {
  recv_async(into, source_rank, name).wait();
}

}  // namespace torch
}  // namespace chorus
