// Splitting a Sequential into consecutive stage parts.
#include "chorus/torch/pipeline/model_split.h"

#include <string>

#include "chorus/status.h"
#include "chorus/torch/pipeline/pipeline_layout.h"

namespace chorus {
namespace torch {
namespace {

std::string to_string(const StageBoundaries& boundaries) {
  std::string out = "[";
  for (size_t i = 0; i < boundaries.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(boundaries[i]);
  }
  return out + "]";
}

}  // namespace

StageBoundaries balanced_boundaries(int64_t layers, int stages) {
  check_stage_count(layers, stages);
  StageBoundaries boundaries{0};
  const int64_t base = layers / stages;
  const int64_t extra = layers % stages;
  for (int64_t s = 0; s < stages; ++s) {
    boundaries.push_back(boundaries.back() + base + (s < extra ? 1 : 0));
  }
  return boundaries;
}

void check_boundaries(const StageBoundaries& boundaries, int64_t layers, int stages) {
  check_stage_count(layers, stages);
  const auto fail = [&](const std::string& why) {
    throw Error(Status::InvalidArgument(
        "pipeline stage boundaries " + to_string(boundaries) + " are invalid for " +
        std::to_string(layers) + " layers and " + std::to_string(stages) + " stages: " + why));
  };
  if (boundaries.size() != static_cast<size_t>(stages) + 1) {
    fail("expected " + std::to_string(stages + 1) + " indices (0, the first layer of each later " +
         "stage, then the number of layers)");
  }
  if (boundaries.front() != 0) fail("expected the first index to be 0");
  if (boundaries.back() != layers) {
    fail("expected the last index to be the number of layers, " + std::to_string(layers));
  }
  for (size_t s = 0; s + 1 < boundaries.size(); ++s) {
    if (boundaries[s + 1] <= boundaries[s]) {
      fail("stage " + std::to_string(s) + " would hold no layer (expected strictly increasing " +
           "indices)");
    }
  }
}

::torch::nn::Sequential stage_part(const std::vector<::torch::nn::AnyModule>& layers, int stages,
                                   int stage, const StageBoundaries& boundaries) {
  const auto count = static_cast<int64_t>(layers.size());
  StageBoundaries bounds = boundaries.empty() ? balanced_boundaries(count, stages) : boundaries;
  check_boundaries(bounds, count, stages);
  if (stage < 0 || stage >= stages) {
    throw Error(Status::InvalidArgument("pipeline stage " + std::to_string(stage) +
                                        " is outside [0, " + std::to_string(stages) + ")"));
  }
  ::torch::nn::Sequential part;
  for (int64_t i = bounds[static_cast<size_t>(stage)]; i < bounds[static_cast<size_t>(stage) + 1];
       ++i) {
    // AnyModule's copy shares the module; the name is its index in the model.
    part->push_back(std::to_string(i), layers[static_cast<size_t>(i)]);
  }
  return part;
}

::torch::nn::Sequential stage_part(const ::torch::nn::Sequential& model, int stages, int stage,
                                   const StageBoundaries& boundaries) {
  std::vector<::torch::nn::AnyModule> layers(model->begin(), model->end());
  return stage_part(layers, stages, stage, boundaries);
}

}  // namespace torch
}  // namespace chorus
