// train_mnist_cuda: data-parallel MNIST training on GPUs, written directly
// on cuBLAS and cuDNN (no LibTorch), with Chorus averaging the gradients in
// GPU memory.
//
//   scripts/prepare_mnist.sh
//   chorusrun -np 8 build/examples/train_mnist_cuda/train_mnist_cuda --data-dir data/mnist
//
// The reference model and run of train_mnist: a 784-128-10 MLP trained with
// Adam (lr 1e-3 x the number of ranks), batch 64 per rank, 5 epochs; --help
// lists the options. Each rank uses GPU local_rank % number of GPUs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/atomic_file.h"
#include "chorus/chorus.h"
#include "cuda_train_options.h"
#include "device_selection.h"
#include "example_start.h"
#include "host_collectives.h"
#include "run_summary.h"
#include "trainer.h"

namespace {

using train_mnist_cuda::CudaTrainOptions;

// This rank's device, or "" and a one-line reason why it cannot train.
std::string find_device(int rank, int* device) {
  const train_mnist_cuda::DeviceProbe probe = train_mnist_cuda::probe_devices();
  if (probe.count < 1) {
    return train_mnist_cuda::no_device_message(rank, probe, std::getenv("CUDA_VISIBLE_DEVICES"));
  }
  const std::string bad_choice = train_mnist_cuda::choose_device(rank, chorus::local_rank(), probe.count,
                                                                 std::getenv("CHORUS_CUDA_DEVICE"), device);
  if (!bad_choice.empty()) return bad_choice;
  // The runtime's own reason when it cannot serve this GPU (no GPU backend
  // in the build, GPU collectives off in this job, another GPU bound).
  const chorus::Status refusal = chorus::check_device("gradients", chorus::Device::cuda(*device));
  if (!refusal.ok()) return "train_mnist_cuda: rank " + std::to_string(rank) + ": " + refusal.message();
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CudaTrainOptions options;
  if (const std::optional<int> exit_status =
          train_mnist::start_example("train_mnist_cuda", argc, argv, train_mnist_cuda::parse_cuda_train_options,
                                     &options)) {
    return *exit_status;
  }
  const int rank = chorus::rank();
  int status = 0;
  std::unique_ptr<train_mnist_cuda::Trainer> trainer;
  try {
    int device = -1;
    const std::string problem = find_device(rank, &device);
    // Said before the agreement below, which every rank reaches: a rank that
    // exits first cannot get this one killed before it has said why.
    if (!problem.empty()) std::fprintf(stderr, "%s\n", problem.c_str());
    // Every rank learns whether all of them can train, so that none waits
    // in a collective for a rank that stopped.
    const bool all_ready = train_mnist_cuda::allreduce_min(problem.empty() ? 1 : 0, "train_mnist_cuda.ready") == 1;
    if (!problem.empty()) {
      status = 1;
    } else if (!all_ready) {
      std::fprintf(stderr, "train_mnist_cuda: rank %d: stopping: another rank cannot train (its message says why)\n",
                   rank);
      status = 1;
    } else {
      train_mnist_cuda::use_device(device);
      const bool live = options.progress == CudaTrainOptions::Progress::kLive ||
                        (options.progress == CudaTrainOptions::Progress::kAuto && ::isatty(STDOUT_FILENO) == 1);
      trainer = std::make_unique<train_mnist_cuda::Trainer>(options, device, std::cout, live);
      const train_mnist::RunSummary summary = trainer->run();
      if (rank == 0 && !options.summary_json.empty()) {
        chorus::write_file_atomically(options.summary_json, train_mnist::to_json(summary), "run summary");
      }
    }
  } catch (const std::exception& e) {
    // Shutting down tells the other ranks, whose pending collectives then
    // fail naming this rank instead of waiting for it.
    std::fprintf(stderr, "train_mnist_cuda: rank %d: error: %s\n", rank, e.what());
    status = 1;
  }
  try {
    chorus::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mnist_cuda: rank %d: error in shutdown: %s\n", rank, e.what());
    status = 1;
  }
  // After shutdown: no collective can still be writing into its buffers.
  trainer.reset();
  return status;
}
