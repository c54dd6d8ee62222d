// train_mnist: data-parallel MNIST training with Chorus's LibTorch front end.
//
//   scripts/prepare_mnist.sh
//   mpirun -np 2 build/examples/train_mnist/train_mnist --data-dir data/mnist
//   chorusrun --elastic --min-np 2 --host-discovery-script ./hosts.sh
//     build/examples/train_mnist/train_mnist --elastic --commit-every 20   (one command)
//
// The reference model is a 784-128-10 MLP trained with Adam (lr 1e-3 x the
// number of ranks), batch 64 per rank, 5 epochs; --help lists the options.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint.h"
#include "chorus/atomic_file.h"
#include "chorus/chorus.h"
#include "example_start.h"
#include "run_summary.h"
#include "train_options.h"
#include "trainer.h"

int main(int argc, char** argv) {
  using namespace train_mnist;
  TrainOptions options;
  if (const std::optional<int> exit_status =
          start_example("train_mnist", argc, argv, parse_train_options, &options)) {
    return *exit_status;
  }
  const int rank = chorus::rank();
  int status = 0;
  try {
    const bool live = options.progress == TrainOptions::Progress::kLive ||
                      (options.progress == TrainOptions::Progress::kAuto && ::isatty(STDOUT_FILENO) == 1);
    Trainer trainer(options, std::cout, live);
    const RunSummary summary = trainer.run();
    if (rank == 0 && !options.summary_json.empty()) {
      chorus::write_file_atomically(options.summary_json, to_json(summary), "run summary");
    }
  } catch (const chorus::torch::HostsChanged& e) {
    // Every rank stopped at the same commit: chorusrun --elastic restarts
    // the job on the new hosts, which resume from it.
    if (rank == 0) std::fprintf(stderr, "train_mnist: %s\n", e.what());
    status = chorus::kElasticRestartExitCode;
  } catch (const std::exception& e) {
    // Shutting down tells the other ranks, whose pending collectives then
    // fail naming this rank instead of waiting for it.
    std::fprintf(stderr, "train_mnist: rank %d: error: %s\n", rank, e.what());
    status = 1;
  }
  try {
    chorus::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mnist: rank %d: error in shutdown: %s\n", rank, e.what());
    status = 1;
  }
  return status;
}
