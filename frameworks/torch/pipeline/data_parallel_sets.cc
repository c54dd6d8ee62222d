// The stages' data-parallel process sets. Its own file: the only part of the
// layout that talks to the runtime.
#include "chorus/torch/pipeline/pipeline_layout.h"

namespace chorus {
namespace torch {

DataParallelSets create_data_parallel_sets(const PipelineLayout& layout) {
  DataParallelSets sets;
  if (layout.data_parallel_size == 1) return sets;
  for (int s = 0; s < layout.stages; ++s) {
    sets.by_stage.push_back(add_process_set(layout.data_parallel_ranks(s)));
  }
  sets.mine = sets.by_stage[static_cast<size_t>(layout.stage)];
  return sets;
}

void remove_data_parallel_sets(const DataParallelSets& sets) {
  for (const ProcessSet& set : sets.by_stage) remove_process_set(set);
}

}  // namespace torch
}  // namespace chorus
