// Layout arithmetic and the checks that run before any pipeline traffic.
#include "chorus/torch/pipeline/pipeline_layout.h"

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

[[noreturn]] void invalid_layout(const std::string& message) {
  throw Error(Status::InvalidArgument("pipeline layout: " + message));
}

}  // namespace

PipelineLayout PipelineLayout::make(int world_size, int rank, int stages) {
  if (stages < 1) {
    invalid_layout("pipeline stages = " + std::to_string(stages) + " is invalid: expected at least 1");
  }
  if (world_size < 1) {
    invalid_layout("job size = " + std::to_string(world_size) + " is invalid: expected at least 1");
  }
  if (rank < 0 || rank >= world_size) {
    invalid_layout("rank " + std::to_string(rank) + " is outside the job's ranks [0, " +
            std::to_string(world_size) + ")");
  }
  if (world_size % stages != 0) {
    invalid_layout(std::to_string(world_size) + " ranks cannot be split into pipelines of " +
            std::to_string(stages) + " stages: expected a number of ranks that is a multiple of " +
            std::to_string(stages));
  }
  PipelineLayout layout;
  layout.stages = stages;
  layout.data_parallel_size = world_size / stages;
  layout.rank = rank;
  layout.stage = rank % stages;
  layout.pipeline = rank / stages;
  return layout;
}

std::vector<int> PipelineLayout::data_parallel_ranks(int stage_index) const {
  std::vector<int> ranks;
  for (int g = 0; g < data_parallel_size; ++g) ranks.push_back(g * stages + stage_index);
  return ranks;
}

std::string PipelineLayout::describe() const {
  return "stage " + std::to_string(stage) + " of " + std::to_string(stages) + ", pipeline " +
         std::to_string(pipeline) + " of " + std::to_string(data_parallel_size) + " (rank " +
         std::to_string(rank) + ")";
}

void check_stage_count(int64_t layers, int stages) {
  if (stages < 1) {
    invalid_layout("pipeline stages = " + std::to_string(stages) + " is invalid: expected at least 1");
  }
  if (layers < stages) {
    invalid_layout("a model of " + std::to_string(layers) + " layers cannot be split into " +
            std::to_string(stages) + " stages: expected at most one stage per layer");
  }
}

void check_micro_batches(int64_t batch_size, int micro_batches) {
  if (micro_batches < 1) {
    invalid_layout("micro-batches = " + std::to_string(micro_batches) +
            " is invalid: expected at least 1");
  }
  if (batch_size < 1) {
    invalid_layout("batch size = " + std::to_string(batch_size) + " is invalid: expected at least 1");
  }
  if (batch_size % micro_batches != 0) {
    invalid_layout(std::to_string(micro_batches) + " micro-batches do not divide a batch of " +
            std::to_string(batch_size) +
            " samples per pipeline: expected a number of micro-batches that divides it");
  }
}

}  // namespace torch
}  // namespace chorus
