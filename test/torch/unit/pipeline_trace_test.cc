// The Chrome trace format of pipeline spans (recording and gathering need the
// runtime and are covered by the pipeline e2e test's trace).
#include <string>

#include <gtest/gtest.h>

#include "chorus/torch/pipeline_trace.h"

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
  EXPECT_EQ(chrome_trace_json({forward, backward}),
            "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"
            "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": "
            "\"stage 1 (rank 3)\"}},\n"
            "{\"name\": \"F0\", \"cat\": \"forward\", \"ph\": \"X\", \"ts\": 10.000, \"dur\": 2.500, "
            "\"pid\": 1, \"tid\": 1, \"args\": {\"step\": 0, \"micro_batch\": 0, \"rank\": 3}},\n"
            "{\"name\": \"B0\", \"cat\": \"backward\", \"ph\": \"X\", \"ts\": 20.000, \"dur\": 5.000, "
            "\"pid\": 1, \"tid\": 1, \"args\": {\"step\": 0, \"micro_batch\": 0, \"rank\": 3}}\n"
            "]}\n");
  EXPECT_EQ(chrome_trace_json({}), "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n\n]}\n");
}

}  // namespace
}  // namespace torch
}  // namespace chorus
