// The transport between pipeline stages: point-to-point messages of named
// tensors between job ranks. The pipeline code only sees this interface, so
// its schedules and autograd boundaries can be tested within one process
// (src/in_process_stage_link.h) as well as over Chorus's send/recv.
#pragma once

#include <memory>
#include <string>

#include <torch/types.h>

namespace chorus {
namespace torch {

class StageLink {
 public:
  virtual ~StageLink() = default;
  // Starts sending `tensor` to `dest_rank` under `name` (unique per step,
  // micro-batch and direction: see Pipeline). Returns at once; the link keeps
  // the tensor alive until the message is out. The receiver learns shape and
  // dtype from the message.
  virtual void send(const ::torch::Tensor& tensor, int dest_rank, const std::string& name) = 0;
  // Blocks until the tensor `source_rank` sent under `name` is here and
  // returns it (a new CPU tensor, or on the device of this rank's stage).
  // Throws chorus::Error when the sender failed or died.
  virtual ::torch::Tensor recv(int source_rank, const std::string& name) = 0;
  // Blocks until every send started so far is out; throws chorus::Error
  // naming the message and the peer when one failed.
  virtual void flush() = 0;
};

// The link over Chorus's point-to-point send and recv (needs chorus::init()).
// Each tensor travels as two messages: "<name>.meta" (dtype and shape, a
// fixed-size int64 tensor) and "<name>" (the data).
std::shared_ptr<StageLink> make_chorus_stage_link();

}  // namespace torch
}  // namespace chorus
