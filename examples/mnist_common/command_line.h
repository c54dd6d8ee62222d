// The MNIST examples' command lines: Boost's parsing with their rules (no
// abbreviated options, no stray words), for train_mnist, train_mnist_cuda and
// tune_mnist; and the options train_mnist and train_mnist_cuda both declare
// the same way (epochs, batch, learning rate, seed, data and checkpoint
// folders, progress lines). Each example keeps its own Options struct; these
// read the shared fields into either.
#pragma once

#include <boost/program_options.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "option_values.h"

namespace train_mnist {

// Parses `arguments` against `description`. A wrong option, a missing value
// or a stray word throws chorus::Error naming it and pointing at
// "<program> --help".
boost::program_options::variables_map parse_command_line(
    const std::vector<std::string>& arguments, const boost::program_options::options_description& description,
    const std::string& program);

// Declares --help, then --epochs, --batch-size, --lr, --seed and --data-dir
// (the options read_shared_options reads), as text: numbers are checked when
// read, so a bad value gets a message naming the accepted range rather than
// Boost's generic one.
void declare_shared_options(boost::program_options::options_description* description,
                            const std::string& default_data_dir);

// Reads --epochs, --batch-size, --lr, --seed and --data-dir (declared by
// declare_shared_options) into the fields of the same names.
template <typename Options>
void read_shared_options(const boost::program_options::variables_map& values, Options* options) {
  auto text = [&](const char* flag) { return values[flag].as<std::string>(); };
  options->epochs = parse_integer_option("epochs", text("epochs"), 1, 100000);
  options->batch_size = parse_integer_option("batch-size", text("batch-size"), 1, 65536);
  options->lr = parse_number_option("lr", text("lr"), /*allow_zero=*/false, 10.0);
  options->seed = parse_unsigned_option("seed", text("seed"), 0, std::numeric_limits<uint64_t>::max(),
                                        "an integer from 0 to 18446744073709551615");
  options->data_dir = text("data-dir");
  if (options->data_dir.empty()) invalid_option("data-dir", "", "a folder with the MNIST IDX files");
}

// Reads --checkpoint-dir, when given, into `checkpoint_dir`.
template <typename Options>
void read_checkpoint_dir(const boost::program_options::variables_map& values, Options* options) {
  if (values.count("checkpoint-dir")) {
    options->checkpoint_dir = values["checkpoint-dir"].as<std::string>();
    if (options->checkpoint_dir.empty()) {
      invalid_option("checkpoint-dir", "", "a folder for checkpoints");
    }
  }
}

// --progress: auto, live or epochs, as an enum with kAuto, kLive and kEpochs.
template <typename Progress>
Progress parse_progress_option(const std::string& progress) {
  if (progress == "auto") return Progress::kAuto;
  if (progress == "live") return Progress::kLive;
  if (progress == "epochs") return Progress::kEpochs;
  invalid_option("progress", progress, "auto, live or epochs");
}

}  // namespace train_mnist
