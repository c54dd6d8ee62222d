// The stages' data-parallel process sets. Its own file: the only part of the
// layout that talks to the runtime.
#include "chorus/torch/pipeline_layout.h"

namespace chorus {
namespace torch {

ProcessSet create_data_parallel_sets(const PipelineLayout& layout) {
  if (layout.data_parallel_size == 1) return ProcessSet::global();
  ProcessSet mine;
  for (int s = 0; s < layout.stages; ++s) {
    ProcessSet set = add_process_set(layout.data_parallel_ranks(s));
    if (s == layout.stage) mine = set;
  }
  return mine;
}

}  // namespace torch
}  // namespace chorus
