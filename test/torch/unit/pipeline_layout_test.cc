// Layout arithmetic, the checks that run before anything is sent, and the
// split of a Sequential into stage parts.
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "chorus/status.h"
#include "chorus/torch/pipeline/model_split.h"
#include "chorus/torch/pipeline/pipeline_layout.h"

namespace chorus {
namespace torch {
namespace {

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
    return e.what();
  }
  return "(no error)";
}

TEST(PipelineLayoutTest, ConsecutiveRanksFormOnePipeline) {
  // 6 ranks, 3 stages: pipelines {0,1,2} and {3,4,5}.
  auto layout = PipelineLayout::make(6, 4, 3);
  EXPECT_EQ(layout.stages, 3);
  EXPECT_EQ(layout.data_parallel_size, 2);
  EXPECT_EQ(layout.stage, 1);
  EXPECT_EQ(layout.pipeline, 1);
  EXPECT_EQ(layout.previous_rank(), 3);
  EXPECT_EQ(layout.next_rank(), 5);
  EXPECT_EQ(layout.last_stage_rank(0), 2);
  EXPECT_EQ(layout.data_parallel_ranks(1), (std::vector<int>{1, 4}));
  EXPECT_EQ(layout.data_parallel_ranks(2), (std::vector<int>{2, 5}));
  EXPECT_FALSE(layout.first_stage());
  EXPECT_FALSE(layout.last_stage());
  EXPECT_EQ(layout.describe(), "stage 1 of 3, pipeline 1 of 2 (rank 4)");
  auto single = PipelineLayout::make(4, 3, 1);
  EXPECT_TRUE(single.first_stage() && single.last_stage());
  EXPECT_EQ(single.data_parallel_size, 4);
}

TEST(PipelineLayoutTest, BadLayoutsAreClearErrors) {
  EXPECT_EQ(error_of([] { PipelineLayout::make(6, 0, 4); }),
            "pipeline layout: 6 ranks cannot be split into pipelines of 4 stages: expected a "
            "number of ranks that is a multiple of 4");
  EXPECT_EQ(error_of([] { PipelineLayout::make(4, 0, 0); }),
            "pipeline layout: pipeline stages = 0 is invalid: expected at least 1");
  EXPECT_EQ(error_of([] { PipelineLayout::make(4, 0, -2); }),
            "pipeline layout: pipeline stages = -2 is invalid: expected at least 1");
  EXPECT_EQ(error_of([] { PipelineLayout::make(4, 4, 2); }),
            "pipeline layout: rank 4 is outside the job's ranks [0, 4)");
  EXPECT_EQ(error_of([] { check_stage_count(3, 4); }),
            "pipeline layout: a model of 3 layers cannot be split into 4 stages: expected at "
            "most one stage per layer");
  EXPECT_EQ(error_of([] { check_micro_batches(64, 3); }),
            "pipeline layout: 3 micro-batches do not divide a batch of 64 samples per pipeline: "
            "expected a number of micro-batches that divides it");
  EXPECT_EQ(error_of([] { check_micro_batches(64, 0); }),
            "pipeline layout: micro-batches = 0 is invalid: expected at least 1");
  EXPECT_EQ(error_of([] { check_micro_batches(0, 1); }),
            "pipeline layout: batch size = 0 is invalid: expected at least 1");
  EXPECT_NO_THROW(check_micro_batches(64, 8));
  EXPECT_NO_THROW(check_stage_count(4, 4));
}

::torch::nn::Sequential five_layers() {
  return ::torch::nn::Sequential(::torch::nn::Linear(4, 8), ::torch::nn::ReLU(), ::torch::nn::Linear(8, 8),
                               ::torch::nn::Tanh(), ::torch::nn::Linear(8, 2));
}

TEST(ModelSplitTest, BalancedBoundariesGiveTheFirstStagesTheExtraLayers) {
  EXPECT_EQ(balanced_boundaries(5, 2), (StageBoundaries{0, 3, 5}));
  EXPECT_EQ(balanced_boundaries(5, 3), (StageBoundaries{0, 2, 4, 5}));
  EXPECT_EQ(balanced_boundaries(4, 4), (StageBoundaries{0, 1, 2, 3, 4}));
  EXPECT_EQ(balanced_boundaries(7, 1), (StageBoundaries{0, 7}));
}

TEST(ModelSplitTest, PartsShareTheModulesAndKeepTheirNames) {
  auto model = five_layers();
  auto first = stage_part(model, 2, 0);
  auto second = stage_part(model, 2, 1);
  EXPECT_EQ(first->size(), 3u);
  EXPECT_EQ(second->size(), 2u);
  std::vector<std::string> names;
  for (const auto& p : second->named_parameters()) names.push_back(p.key());
  EXPECT_EQ(names, (std::vector<std::string>{"4.weight", "4.bias"}));
  // Shared, not copied: the part's parameter is the model's.
  EXPECT_TRUE(second->named_parameters()["4.weight"].is_same(model->named_parameters()["4.weight"]));
  // Running the parts one after the other is running the model.
  auto x = ::torch::randn({3, 4});
  EXPECT_TRUE(::torch::equal(second->forward(first->forward(x)), model->forward(x)));
  // Explicit boundaries.
  auto last = stage_part(model, 3, 2, {0, 1, 4, 5});
  ASSERT_EQ(last->size(), 1u);
  EXPECT_TRUE(last->named_parameters()["4.bias"].is_same(model->named_parameters()["4.bias"]));
}

TEST(ModelSplitTest, ListsOfModulesSplitLikeSequentials) {
  std::vector<::torch::nn::AnyModule> layers{::torch::nn::AnyModule(::torch::nn::Linear(2, 3)),
                                           ::torch::nn::AnyModule(::torch::nn::ReLU()),
                                           ::torch::nn::AnyModule(::torch::nn::Linear(3, 1))};
  auto part = stage_part(layers, 2, 1);
  EXPECT_EQ(part->size(), 1u);
  EXPECT_EQ(part->named_parameters().size(), 2u);
  EXPECT_TRUE(part->named_parameters().contains("2.weight"));
}

TEST(ModelSplitTest, BadSplitsAreClearErrors) {
  auto model = five_layers();
  EXPECT_EQ(error_of([&] { stage_part(model, 6, 0); }),
            "pipeline layout: a model of 5 layers cannot be split into 6 stages: expected at "
            "most one stage per layer");
  EXPECT_EQ(error_of([&] { stage_part(model, 2, 0, {0, 5}); }),
            "pipeline stage boundaries [0, 5] are invalid for 5 layers and 2 stages: expected 3 "
            "indices (0, the first layer of each later stage, then the number of layers)");
  EXPECT_EQ(error_of([&] { stage_part(model, 2, 0, {0, 0, 5}); }),
            "pipeline stage boundaries [0, 0, 5] are invalid for 5 layers and 2 stages: stage 0 "
            "would hold no layer (expected strictly increasing indices)");
  EXPECT_EQ(error_of([&] { stage_part(model, 2, 0, {1, 3, 5}); }),
            "pipeline stage boundaries [1, 3, 5] are invalid for 5 layers and 2 stages: expected "
            "the first index to be 0");
  EXPECT_EQ(error_of([&] { stage_part(model, 2, 0, {0, 3, 4}); }),
            "pipeline stage boundaries [0, 3, 4] are invalid for 5 layers and 2 stages: expected "
            "the last index to be the number of layers, 5");
  EXPECT_EQ(error_of([&] { stage_part(model, 2, 2); }), "pipeline stage 2 is outside [0, 2)");
}

}  // namespace
}  // namespace torch
}  // namespace chorus
