// A Chrome trace (chrome://tracing, Perfetto) of a pipeline's forward and
// backward spans, one row per stage and one span per micro-batch, across
// every rank of the job in one file.
//
// Each rank records its own spans against steady_clock, relative to an
// origin taken right after a barrier when the trace starts (so the ranks'
// rows line up); write() gathers every rank's spans to rank 0, which writes
// the file. Process = pipeline (data-parallel index), thread = stage. A span
// runs from the moment the action's input was here (after it was received
// from a neighbour) to the end of the action, so waiting shows as a gap.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/torch/pipeline/pipeline_layout.h"

namespace chorus {
namespace torch {

struct PipelineSpan {
  enum class Kind { kForward = 0, kBackward = 1 };
  Kind kind = Kind::kForward;
  int rank = 0;
  int stage = 0;
  int pipeline = 0;
  int64_t step = 0;
  int micro_batch = 0;
  double start_us = 0;  // since the trace's origin
  double end_us = 0;
};

class PipelineTrace {
 public:
  using Clock = std::chrono::steady_clock;
  // Collective over the job (a barrier sets the common origin).
  explicit PipelineTrace(const PipelineLayout& layout);

  void record(PipelineSpan::Kind kind, int64_t step, int micro_batch, Clock::time_point start,
              Clock::time_point end);
  const std::vector<PipelineSpan>& spans() const { return spans_; }
  // Collective over the job: every rank's spans, ordered by rank then time
  // (each rank gets all of them).
  std::vector<PipelineSpan> gather() const;
  // Collective over the job: rank 0 writes every rank's spans to `path` as a
  // Chrome trace (JSON). Throws chorus::Error on every rank when rank 0
  // cannot write the file.
  void write(const std::string& path) const;

 private:
  PipelineLayout layout_;
  Clock::time_point origin_;
  std::vector<PipelineSpan> spans_;
};

// The Chrome trace JSON of `spans` ("X" events named "F<mb>"/"B<mb>" with the
// step in args).
std::string chrome_trace_json(const std::vector<PipelineSpan>& spans);

}  // namespace torch
}  // namespace chorus
