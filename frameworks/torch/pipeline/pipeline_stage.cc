// Forward and backward of one stage across the boundaries with its
// neighbours.
#include "chorus/torch/pipeline/pipeline_stage.h"

#include <torch/autograd.h>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

// Runs `transfer` and, when it fails, says which micro-batch, which
// direction and which neighbour (stage and rank): a dead or failing stage is
// named by every stage that talks to it.
template <typename Transfer>
auto with_context(const PipelineLayout& layout, const std::string& what, int peer_stage,
                  Transfer&& transfer) -> decltype(transfer()) {
  try {
    return transfer();
  } catch (const Error& e) {
    throw Error(Status(e.code(), "pipeline " + layout.describe() + ": " + what + " stage " +
                                     std::to_string(peer_stage) + " (rank " +
                                     std::to_string(layout.rank_of_stage(peer_stage)) +
                                     ") failed: " + e.what()));
  }
}

}  // namespace

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
    x = with_context(layout_, "receiving '" + tag + ".act' from", layout_.stage - 1,
                     [&] { return link_->recv(layout_.previous_rank(), tag + ".act"); });
    if (training && !x.is_floating_point()) {
      throw Error(Status::InvalidArgument(
          "pipeline micro-batch '" + tag + "': " + layout_.describe() + " received a " +
          std::string(c10::toString(x.scalar_type())) + " activation from stage " +
          std::to_string(layout_.stage - 1) + ", which cannot carry a gradient back: the " +
          "outputs of stages before the last must be floating point when training"));
    }
    if (training) {
      x.requires_grad_(true);
      // Sends the gradient back the moment backward reaches this boundary.
      // The stage keeps no reference to x: the graph does (autograd's
      // AccumulateGrad node holds its leaf, and with it this hook) until
      // backward has passed, then frees x and the gradient accumulated into
      // it with the rest of the micro-batch's graph. Kept until finish(),
      // they made a stage's memory grow with M even under 1F1B.
      auto link = link_;
      const PipelineLayout layout = layout_;
      const std::string name = tag + ".grad";
      x.register_hook([link, layout, name](const ::torch::Tensor& gradient) {
        with_context(layout, "sending '" + name + "' to", layout.stage - 1,
                     [&] { link->send(gradient.contiguous(), layout.previous_rank(), name); });
      });
    }
  }
  input_ready_ = std::chrono::steady_clock::now();
  ::torch::Tensor output = part_->forward(x);
  if (!layout_.last_stage()) {
    with_context(layout_, "sending '" + tag + ".act' to", layout_.stage + 1, [&] {
      link_->send(output.detach().contiguous(), layout_.next_rank(), tag + ".act");
    });
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
  ::torch::Tensor gradient = with_context(layout_, "receiving '" + tag + ".grad' from",
                                          layout_.stage + 1, [&] {
                                            return link_->recv(layout_.next_rank(), tag + ".grad");
                                          });
  input_ready_ = std::chrono::steady_clock::now();
  ::torch::Tensor output = std::move(found->second);
  found->second = ::torch::Tensor();  // frees the activations as backward goes
  output.backward(gradient);
}

void PipelineStage::finish() {
  if (link_) {
    try {
      link_->flush();
    } catch (const Error& e) {
      throw Error(Status(e.code(), "pipeline " + layout_.describe() + ": " + e.what()));
    }
  }
  outputs_.clear();
}

}  // namespace torch
}  // namespace chorus
