// Pipeline schedules as data: the ordered forward (F) and backward (B)
// actions that one stage runs on the micro-batches of one training step.
//
//   GPipe: every micro-batch's forward, then every backward (in the same
//          order); a stage holds the activations of all M micro-batches.
//   1F1B:  (PipeDream-flush) a warm-up of min(S-1-s, M) forwards on stage s,
//          then alternately one forward and one backward, then a cool-down
//          of the remaining backwards; a stage holds at most S-s micro-
//          batches' activations. Same bubble as GPipe, less memory.
//
// Both are flushes: every backward of the step ends before the optimizer
// steps, so the result equals one step on the full batch.
#pragma once

#include <string>
#include <vector>

namespace chorus {
namespace torch {

enum class PipelineSchedule { kGPipe, k1F1B };
// "gpipe", "1f1b"; parse_pipeline_schedule throws chorus::Error naming the
// bad value and the accepted ones.
const char* pipeline_schedule_name(PipelineSchedule schedule);
PipelineSchedule parse_pipeline_schedule(const std::string& name);

struct PipelineAction {
  enum class Kind { kForward, kBackward };
  Kind kind = Kind::kForward;
  int micro_batch = 0;

  bool operator==(const PipelineAction& o) const {
    return kind == o.kind && micro_batch == o.micro_batch;
  }
};

// The actions of `stage` (0-based, < stages) for `micro_batches` micro-
// batches; throws chorus::Error for values out of range.
std::vector<PipelineAction> make_pipeline_schedule(PipelineSchedule schedule, int stages,
                                                   int stage, int micro_batches);

// "F0 F1 B0 B1": compact form, for tests and logs.
std::string format_actions(const std::vector<PipelineAction>& actions);

// Runs every stage's schedule against the pipeline's dependencies (F of a
// micro-batch on stage s after its F on s-1; its B on s after its B on s+1
// and, on the last stage, after its own F) with each action taking one unit
// of time for forward and `backward_cost` units for backward, and a stage
// running its actions strictly in order. Returns, for each stage, the time
// at which each action started (same order as its schedule); throws
// chorus::Error when the schedules deadlock.
struct ScheduleTimeline {
  std::vector<std::vector<double>> start;  // [stage][action index]
  double makespan = 0;                     // end of the last action
  // Idle fraction of a stage within the step: 1 - busy / makespan (equal
  // for every stage when their costs are equal).
  double bubble(int stage) const;
  std::vector<std::vector<PipelineAction>> actions;
  double backward_cost = 1;
};
ScheduleTimeline simulate_pipeline(PipelineSchedule schedule, int stages, int micro_batches,
                                   double backward_cost = 2.0);

// The theoretical bubble of both schedules: (S-1) / (M+S-1).
double theoretical_bubble(int stages, int micro_batches);

}  // namespace torch
}  // namespace chorus
