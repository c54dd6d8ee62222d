// GPipe and 1F1B action lists, and a dependency simulation that proves them
// deadlock-free and gives their theoretical timeline.
#include "chorus/torch/pipeline/pipeline_schedule.h"

#include <algorithm>
#include <limits>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

void check_arguments(int stages, int stage, int micro_batches) {
  if (stages < 1) {
    throw Error(Status::InvalidArgument("pipeline stages = " + std::to_string(stages) + " is invalid: expected at least 1"));
  }
  if (stage < 0 || stage >= stages) {
    throw Error(Status::InvalidArgument("pipeline stage " + std::to_string(stage) + " is outside [0, " +
            std::to_string(stages) + ")"));
  }
  if (micro_batches < 1) {
    throw Error(Status::InvalidArgument("micro-batches = " + std::to_string(micro_batches) +
            " is invalid: expected at least 1"));
  }
}

using Kind = PipelineAction::Kind;

}  // namespace

const char* pipeline_schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

PipelineSchedule parse_pipeline_schedule(const std::string& name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  throw Error(Status::InvalidArgument("pipeline schedule '" + name + "' is unknown: expected gpipe or 1f1b"));
}

std::vector<PipelineAction> make_pipeline_schedule(PipelineSchedule schedule, int stages,
                                                   int stage, int micro_batches) {
  check_arguments(stages, stage, micro_batches);
  std::vector<PipelineAction> actions;
  if (schedule == PipelineSchedule::kGPipe) {
    for (int m = 0; m < micro_batches; ++m) actions.push_back({Kind::kForward, m});
    for (int m = 0; m < micro_batches; ++m) actions.push_back({Kind::kBackward, m});
    return actions;
  }
  // 1F1B: the warm-up fills the pipeline so that, in steady state, each
  // backward arriving from the next stage finds its forward done.
  const int warmup = std::min(stages - 1 - stage, micro_batches);
  for (int m = 0; m < warmup; ++m) actions.push_back({Kind::kForward, m});
  for (int i = 0; i < micro_batches - warmup; ++i) {
    actions.push_back({Kind::kForward, warmup + i});
    actions.push_back({Kind::kBackward, i});
  }
  for (int m = micro_batches - warmup; m < micro_batches; ++m) {
    actions.push_back({Kind::kBackward, m});
  }
  return actions;
}

std::string format_actions(const std::vector<PipelineAction>& actions) {
  std::string out;
  for (const auto& action : actions) {
    if (!out.empty()) out += ' ';
    out += (action.kind == Kind::kForward ? 'F' : 'B') + std::to_string(action.micro_batch);
  }
  return out;
}

double ScheduleTimeline::bubble(int stage) const {
  double busy = 0;
  for (const auto& action : actions[static_cast<size_t>(stage)]) {
    busy += action.kind == Kind::kForward ? 1.0 : backward_cost;
  }
  return makespan > 0 ? 1.0 - busy / makespan : 0.0;
}

ScheduleTimeline simulate_pipeline(PipelineSchedule schedule, int stages, int micro_batches,
                                   double backward_cost) {
  check_arguments(stages, 0, micro_batches);
  ScheduleTimeline timeline;
  timeline.backward_cost = backward_cost;
  const auto S = static_cast<size_t>(stages);
  const auto M = static_cast<size_t>(micro_batches);
  for (int s = 0; s < stages; ++s) {
    timeline.actions.push_back(make_pipeline_schedule(schedule, stages, s, micro_batches));
    timeline.start.emplace_back(timeline.actions.back().size(), 0.0);
  }
  constexpr double kNotYet = std::numeric_limits<double>::infinity();
  // End times of each stage's forward and backward of each micro-batch.
  std::vector<std::vector<double>> forward_end(S, std::vector<double>(M, kNotYet));
  std::vector<std::vector<double>> backward_end(S, std::vector<double>(M, kNotYet));
  std::vector<size_t> next(S, 0);
  std::vector<double> stage_free(S, 0.0);
  // Repeatedly run any stage whose next action has its inputs; no progress
  // in a full sweep means the schedules wait on each other.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t s = 0; s < S; ++s) {
      while (next[s] < timeline.actions[s].size()) {
        const PipelineAction& action = timeline.actions[s][next[s]];
        const auto m = static_cast<size_t>(action.micro_batch);
        double ready = 0;
        if (action.kind == Kind::kForward) {
          ready = s == 0 ? 0.0 : forward_end[s - 1][m];
        } else {
          ready = s + 1 == S ? forward_end[s][m] : backward_end[s + 1][m];
        }
        if (ready == kNotYet) break;
        const double start = std::max(ready, stage_free[s]);
        const double end = start + (action.kind == Kind::kForward ? 1.0 : backward_cost);
        timeline.start[s][next[s]] = start;
        (action.kind == Kind::kForward ? forward_end : backward_end)[s][m] = end;
        stage_free[s] = end;
        timeline.makespan = std::max(timeline.makespan, end);
        ++next[s];
        progress = true;
      }
    }
  }
  for (size_t s = 0; s < S; ++s) {
    if (next[s] < timeline.actions[s].size()) {
      throw Error(Status::Internal(
          std::string("pipeline schedule ") + pipeline_schedule_name(schedule) + " deadlocks: stage " +
          std::to_string(s) + " waits at action " +
          format_actions({timeline.actions[s][next[s]]})));
    }
  }
  return timeline;
}

double theoretical_bubble(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

}  // namespace torch
}  // namespace chorus
