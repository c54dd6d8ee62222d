#include "run_summary.h"

#include <cstdio>

#include <nlohmann/json.hpp>

namespace train_mnist {

std::string to_json(const RunSummary& summary) {
  std::vector<std::string> digests;
  for (const uint64_t digest : summary.parameter_digests) {
    // As hex strings: JSON readers keep only 53 bits of a number.
    char text[24];
    std::snprintf(text, sizeof(text), "%llx", static_cast<unsigned long long>(digest));
    digests.emplace_back(text);
  }
  // Insertion order: the file reads in the order of the fields above. Doubles
  // that are NaN or infinite (e.g. no epoch run) are written as null.
  const nlohmann::ordered_json json{{"world_size", summary.world_size},
                                    {"model", summary.model},
                                    {"pipeline_stages", summary.pipeline_stages},
                                    {"micro_batches", summary.micro_batches},
                                    {"schedule", summary.schedule},
                                    {"data_parallel_size", summary.data_parallel_size},
                                    {"epochs_run", summary.epochs_run},
                                    {"epochs_this_run", summary.epochs_this_run},
                                    {"stopped_early", summary.stopped_early},
                                    {"final_test_accuracy", summary.final_test_accuracy},
                                    {"final_test_loss", summary.final_test_loss},
                                    {"best_epoch", summary.best_epoch},
                                    {"best_test_loss", summary.best_test_loss},
                                    {"samples_per_second", summary.samples_per_second},
                                    {"wall_seconds", summary.wall_seconds},
                                    {"mean_step_seconds", summary.mean_step_seconds},
                                    {"amp", summary.amp},
                                    {"amp_skipped_steps", summary.amp_skipped_steps},
                                    {"amp_final_scale", summary.amp_final_scale},
                                    {"parameter_digests", digests}};
  return json.dump(2) + "\n";
}

}  // namespace train_mnist
