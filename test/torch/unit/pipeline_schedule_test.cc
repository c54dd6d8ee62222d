// The GPipe and 1F1B schedules as data: exact action lists for small cases,
// and for every S and M up to a bound that each micro-batch runs forward
// then backward once, that the stages' schedules never wait on each other
// (simulation), that their bubble is the theoretical (S-1)/(M+S-1) and that
// 1F1B keeps at most S-s micro-batches' activations on stage s.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "chorus/status.h"
#include "chorus/torch/pipeline/pipeline_schedule.h"

namespace chorus {
namespace torch {
namespace {

using Kind = PipelineAction::Kind;

std::string schedule_of(PipelineSchedule schedule, int stages, int stage, int micro_batches) {
  return format_actions(make_pipeline_schedule(schedule, stages, stage, micro_batches));
}

TEST(PipelineScheduleTest, GPipeRunsEveryForwardThenEveryBackward) {
  EXPECT_EQ(schedule_of(PipelineSchedule::kGPipe, 2, 0, 1), "F0 B0");
  EXPECT_EQ(schedule_of(PipelineSchedule::kGPipe, 4, 2, 3), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(schedule_of(PipelineSchedule::kGPipe, 3, 2, 4), "F0 F1 F2 F3 B0 B1 B2 B3");
}

TEST(PipelineScheduleTest, OneForwardOneBackwardWarmsUpThenAlternates) {
  // S=4, M=8: stage s warms up with 3-s forwards.
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 4, 0, 8),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 4, 1, 8),
            "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 4, 3, 8),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than the warm-up: all forwards, then all backwards.
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 4, 0, 2), "F0 F1 B0 B1");
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 2, 0, 1), "F0 B0");
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 2, 0, 3), "F0 F1 B0 F2 B1 B2");
  EXPECT_EQ(schedule_of(PipelineSchedule::k1F1B, 1, 0, 3), "F0 B0 F1 B1 F2 B2");
}

TEST(PipelineScheduleTest, EveryScheduleIsCompleteDeadlockFreeAndHasTheTheoreticalBubble) {
  for (auto schedule : {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B}) {
    for (int S = 1; S <= 6; ++S) {
      for (int M = 1; M <= 10; ++M) {
        SCOPED_TRACE(std::string(pipeline_schedule_name(schedule)) + " S=" + std::to_string(S) +
                     " M=" + std::to_string(M));
        for (int s = 0; s < S; ++s) {
          const auto actions = make_pipeline_schedule(schedule, S, s, M);
          ASSERT_EQ(actions.size(), static_cast<size_t>(2 * M));
          std::vector<int> state(static_cast<size_t>(M), 0);  // 0 none, 1 F, 2 B
          int in_flight = 0;
          int most_in_flight = 0;
          for (const auto& action : actions) {
            auto& st = state[static_cast<size_t>(action.micro_batch)];
            if (action.kind == Kind::kForward) {
              ASSERT_EQ(st, 0) << "forward twice of micro-batch " << action.micro_batch;
              st = 1;
              most_in_flight = std::max(most_in_flight, ++in_flight);
            } else {
              ASSERT_EQ(st, 1) << "backward before forward of micro-batch " << action.micro_batch;
              st = 2;
              --in_flight;
            }
          }
          if (schedule == PipelineSchedule::k1F1B) {
            EXPECT_LE(most_in_flight, std::min(S - s, M)) << "stage " << s;
          } else {
            EXPECT_EQ(most_in_flight, M);
          }
        }
        for (double backward_cost : {1.0, 2.0}) {
          const auto timeline = simulate_pipeline(schedule, S, M, backward_cost);
          EXPECT_DOUBLE_EQ(timeline.makespan, (M + S - 1) * (1.0 + backward_cost));
          for (int s = 0; s < S; ++s) {
            EXPECT_NEAR(timeline.bubble(s), theoretical_bubble(S, M), 1e-12) << "stage " << s;
          }
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, SimulationRefusesBadArguments) {
  EXPECT_THROW(
      {
        try {
          simulate_pipeline(PipelineSchedule::k1F1B, 0, 1);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("stages = 0"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

TEST(PipelineScheduleTest, NamesParseAndBadValuesAreRefused) {
  EXPECT_EQ(parse_pipeline_schedule("gpipe"), PipelineSchedule::kGPipe);
  EXPECT_EQ(parse_pipeline_schedule("1f1b"), PipelineSchedule::k1F1B);
  EXPECT_STREQ(pipeline_schedule_name(PipelineSchedule::k1F1B), "1f1b");
  try {
    parse_pipeline_schedule("pipedream");
    FAIL() << "accepted 'pipedream'";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "pipeline schedule 'pipedream' is unknown: expected gpipe or 1f1b");
  }
  EXPECT_THROW(make_pipeline_schedule(PipelineSchedule::kGPipe, 2, 2, 4), Error);
  EXPECT_THROW(make_pipeline_schedule(PipelineSchedule::kGPipe, 2, 0, 0), Error);
  EXPECT_THROW(make_pipeline_schedule(PipelineSchedule::k1F1B, 2, -1, 4), Error);
}

TEST(PipelineScheduleTest, TheoreticalBubble) {
  EXPECT_DOUBLE_EQ(theoretical_bubble(1, 4), 0.0);
  EXPECT_DOUBLE_EQ(theoretical_bubble(2, 1), 0.5);
  EXPECT_DOUBLE_EQ(theoretical_bubble(4, 8), 3.0 / 11.0);
}

}  // namespace
}  // namespace torch
}  // namespace chorus
