// Pipeline parallelism: a model split into S stages on consecutive ranks,
// fed micro-batches under the GPipe or the 1F1B schedule.
//
//   auto layout = PipelineLayout::make(chorus::size(), chorus::rank(), S);
//   PipelineOptions options;
//   options.micro_batches = 4;
//   chorus::torch::Pipeline pipeline(model, layout, options, make_chorus_stage_link());
//   torch::optim::SGD sgd(pipeline.part()->parameters(), lr);
//   ...  // every rank, every step:
//   sgd.zero_grad();
//   auto loss = pipeline.train_step(images, labels, loss_fn);  // defined on the last stage
//   sgd.step();
//
// train_step splits the pipeline's batch into M equal micro-batches, runs the
// stage's schedule (pipeline_schedule.h) and leaves in .grad the gradient of
// the full batch's loss: each micro-batch's loss is divided by M, so with a
// mean-reduced loss the accumulated gradients equal one full-batch step's.
// With D data-parallel pipelines, wrap the optimizer in a
// DistributedOptimizer over the stage's data-parallel set
// (create_data_parallel_sets) with backward_passes_per_step = M.
//
// Message names: "<name>.<step>.<micro-batch>.act" (forward, to the next
// stage) and "...grad" (backward, to the previous one); evaluation uses
// "<name>.eval.<n>.act". A step's names never repeat, so micro-batches and
// directions cannot be confused even when messages overtake each other.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <torch/nn/modules/container/sequential.h>

#include "chorus/torch/pipeline/model_split.h"
#include "chorus/torch/pipeline/pipeline_layout.h"
#include "chorus/torch/pipeline/pipeline_schedule.h"
#include "chorus/torch/pipeline/pipeline_stage.h"
#include "chorus/torch/pipeline/pipeline_trace.h"
#include "chorus/torch/pipeline/stage_link.h"

namespace chorus {
namespace torch {

struct PipelineOptions {
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  StageBoundaries boundaries;  // empty: balanced by layer count
  // When > 0, checked against micro_batches at construction (the batch of
  // one pipeline); train_step checks every batch it gets anyway.
  int64_t batch_size = 0;
  std::string name = "pp";  // prefix of every message name
  // Records a PipelineTrace when true or when trace_path is set; write_trace()
  // writes it to trace_path. The environment variable CHORUS_PIPELINE_TRACE
  // (a file path) sets trace_path when it is empty (every rank must see the
  // same value: mpirun passes the environment on).
  bool trace = false;
  std::string trace_path;
};

// Loss of one micro-batch from the last stage's output and its targets; its
// backward drives the pipeline's backward.
using PipelineLoss = std::function<::torch::Tensor(const ::torch::Tensor& output,
                                                   const ::torch::Tensor& target)>;

class Pipeline {
 public:
  // Collective over the job when tracing (the trace starts with a barrier).
  // Every rank passes the same model structure and options; this rank keeps
  // its stage's part. Throws chorus::Error for a bad layout, boundaries,
  // micro-batch count or batch size before any message is sent. `link`:
  // usually make_chorus_stage_link(); may be null only with one stage.
  Pipeline(const ::torch::nn::Sequential& model, const PipelineLayout& layout,
           PipelineOptions options, std::shared_ptr<StageLink> link);

  // One step's forward and backward (see above). `input` is read on the
  // first stage and `target` on the last (either may be undefined
  // elsewhere). Returns the full batch's loss (the sum of the scaled micro-
  // batch losses, detached) on the last stage, undefined elsewhere.
  ::torch::Tensor train_step(const ::torch::Tensor& input, const ::torch::Tensor& target,
                             const PipelineLoss& loss);
  // Inference on the whole batch (no micro-batches, no grad): the model's
  // output on the last stage, undefined elsewhere.
  ::torch::Tensor forward(const ::torch::Tensor& input);

  ::torch::nn::Sequential& part() { return stage_.part(); }
  const PipelineLayout& layout() const { return stage_.layout(); }
  const PipelineOptions& options() const { return options_; }
  // This stage's actions in one step.
  const std::vector<PipelineAction>& actions() const { return actions_; }
  int64_t steps() const { return step_; }
  // Null unless tracing.
  const PipelineTrace* trace() const { return trace_.get(); }
  // Collective over the job: rank 0 writes the trace to `path` (or
  // options().trace_path); nothing when not tracing. Throws chorus::Error
  // on every rank when tracing without a path or when rank 0 cannot write.
  void write_trace(const std::string& path) const;
  void write_trace() const { write_trace(options_.trace_path); }

 private:
  PipelineOptions options_;
  PipelineStage stage_;
  std::vector<PipelineAction> actions_;
  std::unique_ptr<PipelineTrace> trace_;
  int64_t step_ = 0;
  int64_t evaluations_ = 0;
};

}  // namespace torch
}  // namespace chorus
