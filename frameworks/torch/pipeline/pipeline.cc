// Running a stage's schedule over the micro-batches of a step.
#include "chorus/torch/pipeline/pipeline.h"

#include <algorithm>
#include <cstdlib>

#include <torch/torch.h>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

PipelineLayout checked(const ::torch::nn::Sequential& model, const PipelineLayout& layout,
                       const PipelineOptions& options) {
  check_stage_count(static_cast<int64_t>(model->size()), layout.stages);
  if (!options.boundaries.empty()) {
    check_boundaries(options.boundaries, static_cast<int64_t>(model->size()), layout.stages);
  }
  if (options.micro_batches < 1) check_micro_batches(1, options.micro_batches);
  if (options.batch_size != 0) check_micro_batches(options.batch_size, options.micro_batches);
  return layout;
}

PipelineOptions with_trace_path(PipelineOptions options) {
  const char* env = std::getenv("CHORUS_PIPELINE_TRACE");
  if (options.trace_path.empty() && env != nullptr) options.trace_path = env;
  if (!options.trace_path.empty()) options.trace = true;
  return options;
}

}  // namespace

Pipeline::Pipeline(const ::torch::nn::Sequential& model, const PipelineLayout& layout,
                   PipelineOptions options, std::shared_ptr<StageLink> link)
    : options_(with_trace_path(std::move(options))),
      stage_(stage_part(model, checked(model, layout, options_).stages, layout.stage,
                        options_.boundaries),
             layout, std::move(link)),
      actions_(make_pipeline_schedule(options_.schedule, layout.stages, layout.stage,
                                      options_.micro_batches)) {
  if (options_.trace) trace_ = std::make_unique<PipelineTrace>(layout);
}

::torch::Tensor Pipeline::train_step(const ::torch::Tensor& input, const ::torch::Tensor& target,
                                     const PipelineLoss& loss) {
  const PipelineLayout& layout = stage_.layout();
  const int M = options_.micro_batches;
  const std::string step_tag = options_.name + "." + std::to_string(step_) + ".";
  // Only the first stage needs the input and only the last the targets.
  std::vector<::torch::Tensor> inputs;
  std::vector<::torch::Tensor> targets;
  if (layout.first_stage()) {
    if (!input.defined() || input.dim() == 0) {
      throw Error(Status::InvalidArgument("Pipeline::train_step on " + layout.describe() +
                                          ": the first stage needs an input batch"));
    }
    check_micro_batches(input.size(0), M);
    inputs = input.chunk(M, 0);
  }
  if (layout.last_stage()) {
    if (!target.defined() || target.dim() == 0 || !loss) {
      throw Error(Status::InvalidArgument("Pipeline::train_step on " + layout.describe() +
                                          ": the last stage needs the targets and a loss"));
    }
    check_micro_batches(target.size(0), M);
    targets = target.chunk(M, 0);
  }
  std::vector<::torch::Tensor> losses(static_cast<size_t>(M));
  ::torch::Tensor total;
  for (const PipelineAction& action : actions_) {
    const auto m = static_cast<size_t>(action.micro_batch);
    const std::string tag = step_tag + std::to_string(action.micro_batch);
    const auto start = PipelineTrace::Clock::now();
    if (action.kind == PipelineAction::Kind::kForward) {
      auto output = stage_.forward(layout.first_stage() ? inputs[m] : ::torch::Tensor(), tag);
      if (layout.last_stage()) losses[m] = loss(output, targets[m]) / M;
    } else if (layout.last_stage()) {
      losses[m].backward();
      auto value = losses[m].detach();
      total = total.defined() ? total + value : value;
      losses[m] = ::torch::Tensor();
    } else {
      stage_.backward(tag);
    }
    if (trace_) {
      // Spans show compute: from the moment the input was here (a backward
      // on the last stage has its input, the loss, at once).
      const bool received = !(action.kind == PipelineAction::Kind::kBackward && layout.last_stage()) &&
                            !(action.kind == PipelineAction::Kind::kForward && layout.first_stage());
      const auto begin = received ? std::max(start, stage_.input_ready()) : start;
      trace_->record(action.kind == PipelineAction::Kind::kForward ? PipelineSpan::Kind::kForward
                                                                   : PipelineSpan::Kind::kBackward,
                     step_, action.micro_batch, begin, PipelineTrace::Clock::now());
    }
  }
  stage_.finish();
  ++step_;
  return total;
}

::torch::Tensor Pipeline::forward(const ::torch::Tensor& input) {
  ::torch::NoGradGuard no_grad;
  const std::string tag = options_.name + ".eval." + std::to_string(evaluations_++);
  auto output = stage_.forward(stage_.layout().first_stage() ? input : ::torch::Tensor(), tag);
  stage_.finish();
  return stage_.layout().last_stage() ? output : ::torch::Tensor();
}

void Pipeline::write_trace(const std::string& path) const {
  if (!trace_) return;
  if (path.empty()) {
    throw Error(Status::InvalidArgument(
        "Pipeline::write_trace: the pipeline records a trace but has no file to write it to "
        "(pass a path, or set PipelineOptions::trace_path or CHORUS_PIPELINE_TRACE)"));
  }
  trace_->write(path);
}

}  // namespace torch
}  // namespace chorus
