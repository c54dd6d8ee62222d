// The Chrome trace format of pipeline spans (recording and gathering need the
// runtime and are covered by the pipeline e2e test's trace).
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chorus/torch/pipeline/pipeline_trace.h"

namespace chorus {
namespace torch {
namespace {

TEST(PipelineTraceTest, SpansBecomeCompleteEventsWithOneRowPerStage) {
  PipelineSpan forward;
  forward.kind = PipelineSpan::Kind::kForward;
  forward.rank = 3;
  forward.stage = 1;
  forward.pipeline = 1;
  forward.step = 0;
  forward.micro_batch = 0;
  forward.start_us = 10;
  forward.end_us = 12.5;
  PipelineSpan backward = forward;
  backward.kind = PipelineSpan::Kind::kBackward;
  backward.micro_batch = 0;
  backward.start_us = 20;
  backward.end_us = 25;
  using nlohmann::json;
  const std::string text = chrome_trace_json({forward, backward});
  EXPECT_EQ(json::parse(text),
            json::parse(R"json({"displayTimeUnit": "ms", "traceEvents": [
      {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "stage 1 (rank 3)"}},
      {"name": "F0", "cat": "forward", "ph": "X", "ts": 10.0, "dur": 2.5, "pid": 1, "tid": 1,
       "args": {"step": 0, "micro_batch": 0, "rank": 3}},
      {"name": "B0", "cat": "backward", "ph": "X", "ts": 20.0, "dur": 5.0, "pid": 1, "tid": 1,
       "args": {"step": 0, "micro_batch": 0, "rank": 3}}]})json"))
      << text;
  EXPECT_EQ(json::parse(chrome_trace_json({})), (json{{"displayTimeUnit", "ms"}, {"traceEvents", json::array()}}));
}

}  // namespace
}  // namespace torch
}  // namespace chorus
