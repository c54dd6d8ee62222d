#include "run_summary.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace train_mnist {
namespace {

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

}  // namespace

std::string to_json(const RunSummary& summary) {
  std::ostringstream out;
  out << "{\n"
      << "  \"world_size\": " << summary.world_size << ",\n"
      << "  \"model\": \"" << summary.model << "\",\n"
      << "  \"pipeline_stages\": " << summary.pipeline_stages << ",\n"
      << "  \"micro_batches\": " << summary.micro_batches << ",\n"
      << "  \"schedule\": \"" << summary.schedule << "\",\n"
      << "  \"data_parallel_size\": " << summary.data_parallel_size << ",\n"
      << "  \"epochs_run\": " << summary.epochs_run << ",\n"
      << "  \"epochs_this_run\": " << summary.epochs_this_run << ",\n"
      << "  \"stopped_early\": " << (summary.stopped_early ? "true" : "false") << ",\n"
      << "  \"final_test_accuracy\": " << number(summary.final_test_accuracy) << ",\n"
      << "  \"final_test_loss\": " << number(summary.final_test_loss) << ",\n"
      << "  \"best_epoch\": " << summary.best_epoch << ",\n"
      << "  \"best_test_loss\": " << number(summary.best_test_loss) << ",\n"
      << "  \"samples_per_second\": " << number(summary.samples_per_second) << ",\n"
      << "  \"wall_seconds\": " << number(summary.wall_seconds) << ",\n"
      << "  \"mean_step_seconds\": " << number(summary.mean_step_seconds) << ",\n"
      << "  \"amp\": \"" << summary.amp << "\",\n"
      << "  \"amp_skipped_steps\": " << summary.amp_skipped_steps << ",\n"
      << "  \"amp_final_scale\": " << number(summary.amp_final_scale) << ",\n"
      << "  \"parameter_digests\": [";
  for (size_t i = 0; i < summary.parameter_digests.size(); ++i) {
    // As strings: JSON readers keep only 53 bits of a number.
    out << (i ? ", " : "") << "\"" << std::hex << summary.parameter_digests[i] << std::dec << "\"";
  }
  out << "]\n}\n";
  return out.str();
}

}  // namespace train_mnist
