#include "in_process_stage_link.h"

#include "chorus/status.h"

namespace chorus {
namespace torch {

void InProcessMailbox::put(int source, int dest, const std::string& name,
                           ::torch::Tensor tensor) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const bool fresh = messages_.emplace(Key{source, dest, name}, std::move(tensor)).second;
    if (!fresh) {
      throw Error(Status::InvalidArgument("message '" + name + "' from rank " +
                                          std::to_string(source) + " to rank " +
                                          std::to_string(dest) + " was sent twice"));
    }
  }
  arrived_.notify_all();
}

::torch::Tensor InProcessMailbox::take(int source, int dest, const std::string& name) {
  std::unique_lock<std::mutex> lock(mutex_);
  const Key key{source, dest, name};
  arrived_.wait(lock, [&] { return messages_.count(key) != 0; });
  ::torch::Tensor tensor = std::move(messages_[key]);
  messages_.erase(key);
  return tensor;
}

size_t InProcessMailbox::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return messages_.size();
}

void InProcessStageLink::send(const ::torch::Tensor& tensor, int dest_rank,
                              const std::string& name) {
  // A copy, as a real transport would make: the receiver must not share
  // storage (or autograd history) with the sender.
  mailbox_->put(rank_, dest_rank, name, tensor.detach().clone());
}

::torch::Tensor InProcessStageLink::recv(int source_rank, const std::string& name) {
  return mailbox_->take(source_rank, rank_, name);
}

}  // namespace torch
}  // namespace chorus
