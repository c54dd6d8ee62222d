// Model parallelism's second half: autograd across stage boundaries.
//
// Every rank of a pipeline holds one PipelineStage (its part of the model)
// and calls the same functions in the same order (SPMD):
//
//   auto out = stage.forward(input, "mp.0");   // stage 0 reads `input`; the
//                                              // others receive "mp.0.act"
//   if (layout.last_stage()) loss_fn(out, target).backward();
//   else stage.backward("mp.0");                // receives "mp.0.grad"
//   stage.finish();                             // every message is out
//
// On a stage after the first, forward receives the previous stage's output
// as a leaf that requires grad; a hook on it sends its gradient back as
// "<tag>.grad" the moment backward computes it. On a stage before the last,
// backward receives the gradient of its output and continues backward from
// there, which reaches that hook in turn: so loss.backward() on the last
// stage trains the whole model.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <torch/nn/modules/container/sequential.h>

#include "chorus/torch/pipeline/pipeline_layout.h"
#include "chorus/torch/pipeline/stage_link.h"

namespace chorus {
namespace torch {

class PipelineStage {
 public:
  PipelineStage(::torch::nn::Sequential part, PipelineLayout layout,
                std::shared_ptr<StageLink> link);

  // Runs this stage's part on micro-batch `tag` (the first stage on `input`,
  // the others on "<tag>.act" from the previous stage) and, before the last
  // stage, sends the output on as "<tag>.act". Returns the part's output.
  // With grad mode off (inference) nothing is kept for backward.
  ::torch::Tensor forward(const ::torch::Tensor& input, const std::string& tag);
  // Before the last stage: receives "<tag>.grad" and runs backward from the
  // output of forward(tag). The last stage runs its loss's backward instead.
  // Throws chorus::Error when forward(tag) did not run or backward ran twice.
  void backward(const std::string& tag);
  // Waits until every message this stage sent is out. Call at the end of
  // each step. (A micro-batch's tensors are freed as soon as its backward has
  // run, so under 1F1B stage s holds at most S - s micro-batches at once.)
  void finish();

  // When the last forward() or backward() had its input (after receiving it
  // from a neighbour): the trace draws compute from there, not the wait.
  std::chrono::steady_clock::time_point input_ready() const { return input_ready_; }

  ::torch::nn::Sequential& part() { return part_; }
  const PipelineLayout& layout() const { return layout_; }

 private:
  ::torch::nn::Sequential part_;
  PipelineLayout layout_;
  std::shared_ptr<StageLink> link_;
  // Per micro-batch tag, stages before the last: the output backward starts
  // from, released by backward(tag). The received input needs no entry: its
  // micro-batch's graph holds it (and its gradient hook) until backward.
  std::map<std::string, ::torch::Tensor> outputs_;
  std::chrono::steady_clock::time_point input_ready_;
};

}  // namespace torch
}  // namespace chorus
