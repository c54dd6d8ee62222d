// tune_mnist's command line (Boost.Program_options): every value is checked
// here, and a bad one throws chorus::Error naming the option, the value and
// what it accepts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tune_mnist {

struct TuneOptions {
  std::string scheduler = "asha";  // asha | hyperband | random
  int ranks_per_trial = 1;
  int64_t max_budget = 9;          // R, in epochs
  int64_t min_budget = 1;          // ASHA's r, in epochs
  int64_t eta = 3;
  int64_t trials = 27;             // ASHA and random search; hyperband: from R and eta
  bool trials_given = false;
  uint64_t seed = 42;
  bool resume = false;
  std::string state = "tune_mnist_state.json";
  std::string log;                 // "" : none
  std::string plot;                // "" : none
  std::string checkpoint_dir;      // "" : <state>.checkpoints
  std::string data_dir = "data/mnist";
  int64_t validation_samples = 1000;  // the last of the training file: the search's metric
  int64_t train_samples = 0;          // 0: the rest of the training file
  int threads = 1;
  bool quiet = false;                 // no per-job progress lines
};

struct ParsedTuneCommandLine {
  std::optional<TuneOptions> options;  // empty: --help was asked for
  std::string help;
};

ParsedTuneCommandLine parse_tune_options(const std::vector<std::string>& arguments);

}  // namespace tune_mnist
