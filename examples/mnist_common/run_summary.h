// The end-of-run summary that --summary-json writes (rank 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace train_mnist {

struct RunSummary {
  int world_size = 0;
  std::string model;
  // The layout: pipeline stages x data-parallel replicas (= world_size).
  int pipeline_stages = 1;
  int micro_batches = 1;
  std::string schedule = "none";  // gpipe or 1f1b with a pipeline
  int data_parallel_size = 0;
  int64_t epochs_run = 0;        // epochs completed in total (a resumed run counts earlier ones)
  int64_t epochs_this_run = 0;   // epochs trained by this process
  bool stopped_early = false;
  double final_test_accuracy = 0;
  double final_test_loss = 0;
  int64_t best_epoch = 0;
  double best_test_loss = 0;
  double samples_per_second = 0;  // training samples of all ranks / training seconds, this run
  double wall_seconds = 0;        // this run, from start to end of training
  double mean_step_seconds = 0;   // training seconds / optimizer steps, this run
  // Mixed precision: off, bf16 or fp16; steps the gradient scaler skipped
  // (inf/NaN gradients) and its scale at the end (1 when off).
  std::string amp = "off";
  int64_t amp_skipped_steps = 0;
  double amp_final_scale = 1;
  // One XXH3-64 digest (chorus::checksum64) of every rank's final parameters, indexed by rank:
  // equal digests mean the replicas agree bit for bit (in a pipeline: of the
  // rank's stage, equal across the stage's data-parallel set).
  std::vector<uint64_t> parameter_digests;
};

// One JSON object; NaN and infinities (e.g. no epoch run) become null.
std::string to_json(const RunSummary& summary);

}  // namespace train_mnist
