// mnist_reference_train --np N [train_mnist options]: what `mpirun -np N
// train_mnist [options]` computes, computed in one process without Chorus
// (reference_training.h), for the end-to-end tests to compare with bit for
// bit. Writes --summary-json (the fields the reference knows, as train_mnist
// writes them) and, with --checkpoint-dir, the final checkpoint
// (checkpoint-<epochs>.ckpt, train_mnist's format). Exit status 2 for bad
// arguments, 1 when training or writing fails (message on stderr).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "chorus/atomic_file.h"
#include "chorus/torch/checkpoint/checkpoint.h"
#include "chorus/torch/checkpoint/checkpoint_extras.h"
#include "chorus/torch/grad_scaler.h"
#include "reference_training.h"

int main(int argc, char** argv) {
  using namespace train_mnist;
  std::vector<std::string> arguments(argv + 1, argv + argc);
  int world_size = 0;
  TrainOptions options;
  try {
    if (arguments.size() < 2 || arguments[0] != "--np") {
      throw std::invalid_argument("usage: mnist_reference_train --np N [train_mnist options]");
    }
    world_size = std::stoi(arguments[1]);
    arguments.erase(arguments.begin(), arguments.begin() + 2);
    const ParsedCommandLine parsed = parse_train_options(arguments);
    if (!parsed.options) throw std::invalid_argument("--help: see train_mnist --help");
    options = *parsed.options;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_reference_train: error: %s\n", e.what());
    return 2;
  }
  try {
    const MnistData train = load_mnist(options.data_dir, MnistSplit::kTrain);
    const MnistData test = load_mnist(options.data_dir, MnistSplit::kTest);
    const train_mnist_test::ReferenceRun run = train_mnist_test::train_reference(options, world_size, train, test);
    const RunSummary summary = train_mnist_test::reference_summary(options, world_size, run);
    std::printf("reference of np=%d: test loss %.9g, test accuracy %.4f after %lld epochs\n", world_size,
                summary.final_test_loss, summary.final_test_accuracy, static_cast<long long>(options.epochs));
    if (!options.summary_json.empty()) {
      chorus::write_file_atomically(options.summary_json, to_json(summary), "run summary");
    }
    if (!options.checkpoint_dir.empty()) {
      std::filesystem::create_directories(options.checkpoint_dir);
      chorus::torch::GradScaler scaler;
      chorus::torch::CheckpointExtras extras;
      chorus::torch::save_checkpoint_file(
          options.checkpoint_dir + "/checkpoint-" + std::to_string(options.epochs) + ".ckpt",
          checkpoint_contents(*run.model, *run.adam, scaler, extras));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_reference_train: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
