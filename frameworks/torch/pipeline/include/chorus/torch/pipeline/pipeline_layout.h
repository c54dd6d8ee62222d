// The 2-D layout of pipeline training: S pipeline stages x D data-parallel
// groups over the job's ranks (size = S * D).
//
// Consecutive ranks form one pipeline: ranks g*S .. g*S+S-1 are stages
// 0 .. S-1 of pipeline g, so a pipeline's point-to-point traffic stays
// between neighbouring ranks (usually the same host). Stage s of every
// pipeline holds the same part of the model; those ranks {s, s+S, s+2S, ...}
// form stage s's data-parallel set, over which its gradients are averaged.
//
// Every check runs before anything is sent, so a bad layout is a clear
// chorus::Error (kInvalidArgument) on every rank instead of a hang.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/process_set.h"

namespace chorus {
namespace torch {

struct PipelineLayout {
  int stages = 1;              // S
  int data_parallel_size = 1;  // D
  int rank = 0;                // this rank in the job
  int stage = 0;               // this rank's stage, rank % S
  int pipeline = 0;            // this rank's pipeline (data-parallel index), rank / S

  // Throws chorus::Error for stages < 1, world_size < 1, a rank outside
  // [0, world_size) or a world size that stages does not divide.
  static PipelineLayout make(int world_size, int rank, int stages);

  bool first_stage() const { return stage == 0; }
  bool last_stage() const { return stage == stages - 1; }
  // The job rank of `stage_index` in this rank's pipeline.
  int rank_of_stage(int stage_index) const { return pipeline * stages + stage_index; }
  int previous_rank() const { return rank_of_stage(stage - 1); }  // only when !first_stage()
  int next_rank() const { return rank_of_stage(stage + 1); }      // only when !last_stage()
  // The job ranks that hold stage `stage_index`: {stage_index, stage_index + S, ...}.
  std::vector<int> data_parallel_ranks(int stage_index) const;
  // The job rank of the last stage of pipeline `pipeline_index`.
  int last_stage_rank(int pipeline_index) const { return pipeline_index * stages + stages - 1; }
  // "stage 1 of 2, pipeline 0 of 2 (rank 1)": for error messages and logs.
  std::string describe() const;
};

// Throws chorus::Error unless 1 <= stages <= layers (a stage needs at least
// one layer).
void check_stage_count(int64_t layers, int stages);
// Throws chorus::Error unless micro_batches >= 1 divides batch_size >= 1
// (the batch of one data-parallel group, i.e. of one pipeline), so that every
// micro-batch has the same size and the scaled micro-batch losses add up to
// the full batch's mean loss.
void check_micro_batches(int64_t batch_size, int micro_batches);

// Every stage's data-parallel process set, and the one this rank's stage
// reduces its gradients over.
struct DataParallelSets {
  std::vector<ProcessSet> by_stage;  // [stage]; empty when D == 1
  // This rank's stage's set. With D == 1 there is nothing to reduce over: the
  // global set (do not average gradients then).
  ProcessSet mine;
};
// Collective over the whole job (every rank calls it, in the same order):
// creates stage s's set {s, s+S, ...} for every s; nothing when D == 1.
DataParallelSets create_data_parallel_sets(const PipelineLayout& layout);
// Collective over the whole job: removes them all (every rank passes the
// same sets, so every rank removes every stage's set).
void remove_data_parallel_sets(const DataParallelSets& sets);

}  // namespace torch
}  // namespace chorus
