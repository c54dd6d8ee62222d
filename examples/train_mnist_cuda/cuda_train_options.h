// Command-line options of train_mnist_cuda: train_mnist's, less those that
// belong to LibTorch (--model: the MLP only; --threads; --compression, which
// the torch front end implements), with the same names, defaults and checks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace train_mnist_cuda {

struct CudaTrainOptions {
  int64_t epochs = 5;
  int64_t batch_size = 64;  // per rank
  double lr = 1e-3;         // single-process learning rate; the run uses lr x size()
  uint64_t seed = 42;
  std::string data_dir = "data/mnist";
  std::string checkpoint_dir;  // empty: no checkpoints
  bool resume = false;
  int64_t early_stopping_patience = 0;  // 0: off
  double clip_grad_norm = 0;            // 0: off
  int64_t accumulate = 1;               // backward passes per optimizer step
  std::string summary_json;             // empty: none
  // The live in-epoch line: "auto" draws it when stdout is a terminal (under
  // mpirun every rank's stdout is one, so scripts pass "epochs").
  enum class Progress { kAuto, kLive, kEpochs };
  Progress progress = Progress::kAuto;
};

// Options to train with, or help text to print (--help).
struct ParsedCudaCommandLine {
  std::optional<CudaTrainOptions> options;
  std::string help;
};

// Throws chorus::Error naming the option, the bad value and what is accepted
// (e.g. "--batch-size=0 is invalid: expected an integer from 1 to 65536").
ParsedCudaCommandLine parse_cuda_train_options(const std::vector<std::string>& arguments);

}  // namespace train_mnist_cuda
