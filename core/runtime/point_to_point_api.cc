// The public point-to-point API (chorus.h): send_async/recv_async and their
// blocking forms. No negotiation: the transfer is handed to the transport
// (core/contracts/point_to_point.h) on the calling thread, and its handle drives the
// transport while it is tested or waited for.
#include <memory>
#include <string>

#include "chorus/chorus.h"
#include "runtime/argument_checks.h"
#include "runtime/api.h"

namespace chorus {
namespace {

// `role`: "dest_rank" or "source_rank".
Status check_peer(const std::string& name, const char* role, int peer, int me, int size) {
  if (peer < 0 || peer >= size) {
    return Status::InvalidArgument("'" + name + "': " + role + " " + std::to_string(peer) +
                                   " is not a rank of this job; expected 0 to " + std::to_string(size - 1));
  }
  if (peer == me) {
    return Status::InvalidArgument("'" + name + "': " + role + " " + std::to_string(peer) +
                                   " is this rank itself; point-to-point needs another rank");
  }
  return Status::OK();
}

Status check_p2p_tensor(const std::string& name, const Tensor& tensor) {
  CHORUS_RETURN_IF_ERROR(check_tensor(name, "tensor", tensor));
  if (tensor.device.kind != Device::Kind::kCPU) {
    return Status::InvalidArgument("'" + name + "': the tensor is on " + tensor.device.to_string() +
                                   "; point-to-point takes host (cpu) tensors");
  }
  return Status::OK();
}

Handle start(const std::string& name, const Tensor& tensor, int peer, bool is_send) {
  auto rt = detail::running_runtime();
  const int me = rt->topology().rank;
  throw_if_error(check_name(name));
  throw_if_error(check_p2p_tensor(name, tensor));
  throw_if_error(check_peer(name, is_send ? "dest_rank" : "source_rank", peer, me, rt->topology().size));
  auto state = rt->new_handle(name, is_send ? OpType::kSend : OpType::kRecv);
  state->set_progress(rt->point_to_point_progress());
  // The transport keeps the transfer, not the handle: a handle the caller
  // drops is simply not completed.
  std::weak_ptr<detail::HandleState> weak = state;
  PointToPoint::Completion done = [weak](const Status& status) {
    if (auto handle = weak.lock()) handle->complete_member(status);
  };
  PointToPoint& p2p = rt->point_to_point();
  throw_if_error(is_send ? p2p.send(name, tensor, peer, std::move(done))
                         : p2p.recv(name, tensor, peer, std::move(done)));
  return Handle(std::move(state));
}

}  // namespace

Handle send_async(const std::string& name, const Tensor& tensor, int dest_rank) {
  return start(name, tensor, dest_rank, true);
}

Handle recv_async(const std::string& name, const Tensor& tensor, int source_rank) {
  return start(name, tensor, source_rank, false);
}

void send(const std::string& name, const Tensor& tensor, int dest_rank) {
  send_async(name, tensor, dest_rank).wait();
}

void recv(const std::string& name, const Tensor& tensor, int source_rank) {
  recv_async(name, tensor, source_rank).wait();
}

}  // namespace chorus
