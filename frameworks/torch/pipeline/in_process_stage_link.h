// A StageLink between threads of one process: every "rank" is a thread and
// messages are handed over through a shared mailbox. Lets unit tests run a
// whole pipeline (every stage, both schedules) without MPI.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "chorus/torch/pipeline/stage_link.h"

namespace chorus {
namespace torch {

class InProcessMailbox {
 public:
  void put(int source, int dest, const std::string& name, ::torch::Tensor tensor);
  ::torch::Tensor take(int source, int dest, const std::string& name);
  // Messages posted and not taken (a correct pipeline leaves none).
  size_t pending() const;

 private:
  using Key = std::tuple<int, int, std::string>;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<Key, ::torch::Tensor> messages_;
};

class InProcessStageLink : public StageLink {
 public:
  InProcessStageLink(std::shared_ptr<InProcessMailbox> mailbox, int rank)
      : mailbox_(std::move(mailbox)), rank_(rank) {}
  void send(const ::torch::Tensor& tensor, int dest_rank, const std::string& name) override;
  ::torch::Tensor recv(int source_rank, const std::string& name) override;
  void flush() override {}

 private:
  std::shared_ptr<InProcessMailbox> mailbox_;
  int rank_;
};

}  // namespace torch
}  // namespace chorus
