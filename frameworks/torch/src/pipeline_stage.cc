// Forward and backward of one stage across the boundaries with its
// neighbours.
#include "chorus/torch/pipeline_stage.h"

#include <torch/autograd.h>

#include "chorus/status.h"

namespace chorus {
namespace torch {

PipelineStage::PipelineStage(::torch::nn::Sequential part, PipelineLayout layout,
                             std::shared_ptr<StageLink> link)
    : part_(std::move(part)), layout_(layout), link_(std::move(link)) {
  if (layout_.stages > 1 && !link_) {
    throw Error(Status::InvalidArgument("PipelineStage of " + layout_.describe() +
                                        " needs a StageLink to its neighbours"));
  }
}

::torch::Tensor PipelineStage::forward(const ::torch::Tensor& input, const std::string& tag) {
  const bool training = ::torch::GradMode::is_enabled();
  ::torch::Tensor x;
  if (layout_.first_stage()) {
    if (!input.defined()) {
      throw Error(Status::InvalidArgument("pipeline micro-batch '" + tag +
                                          "': the first stage needs the input batch"));
    }
    x = input;
  } else {
    x = link_->recv(layout_.previous_rank(), tag + ".act");
    if (training && x.is_floating_point()) {
      x.requires_grad_(true);
      // Sends the gradient back the moment backward reaches this boundary.
      auto link = link_;
      const int previous = layout_.previous_rank();
      const std::string name = tag + ".grad";
      x.register_hook([link, previous, name](const ::torch::Tensor& gradient) {
        link->send(gradient.contiguous(), previous, name);
      });
      inputs_[tag] = x;
    }
  }
  ::torch::Tensor output = part_->forward(x);
  if (!layout_.last_stage()) {
    link_->send(output.detach().contiguous(), layout_.next_rank(), tag + ".act");
    if (training) {
      if (!output.requires_grad()) {
        throw Error(Status::InvalidArgument(
            "pipeline micro-batch '" + tag + "': the output of " + layout_.describe() +
            " does not require grad, so no gradient could flow back through it"));
      }
      outputs_[tag] = output;
    }
  }
  return output;
}

void PipelineStage::backward(const std::string& tag) {
  if (layout_.last_stage()) {
    throw Error(Status::InvalidArgument(
        "pipeline micro-batch '" + tag + "': the last stage runs backward from its loss " +
        "(loss.backward()), not PipelineStage::backward"));
  }
  auto found = outputs_.find(tag);
  if (found == outputs_.end() || !found->second.defined()) {
    throw Error(Status::InvalidArgument("pipeline micro-batch '" + tag + "' on " +
                                        layout_.describe() +
                                        ": backward without a forward, or twice"));
  }
  ::torch::Tensor gradient = link_->recv(layout_.next_rank(), tag + ".grad");
  ::torch::Tensor output = std::move(found->second);
  found->second = ::torch::Tensor();  // frees the activations as backward goes
  output.backward(gradient);
}

void PipelineStage::finish() {
  if (link_) link_->flush();
  outputs_.clear();
  inputs_.clear();
}

}  // namespace torch
}  // namespace chorus
