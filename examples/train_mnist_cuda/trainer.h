// The training loop of train_mnist_cuda: train_mnist's loop (same options,
// split, shards, per-epoch line, summary and checkpoints) on one GPU per
// rank, with Chorus averaging the gradients in GPU memory.
//
// Per step, on one stream: gather the batch from the preloaded set, forward
// (cuBLAS, cuDNN), loss and dL/dZ (kernels.h), backward. As soon as a
// layer's two gradients are queued, an event is recorded after them and
// they are submitted to chorus::allreduce_async (average) with that event as
// Tensor::ready: the output layer's allreduce runs while the hidden layer's
// gradients are computed, and this thread never waits for the GPU to submit.
// The optimizer step then waits for the four handles (Handle::wait() returns
// once the averaged gradients are in place on the device) and queues Adam.
//
// Every rank starts from rank 0's parameters and Adam state (initialised
// from --seed, or read from the checkpoint when resuming) and takes its
// shard of the training set per epoch (ShardSampler); test loss and accuracy
// are sums over every rank's share of the test set, allreduced on the host,
// so every rank sees the same figures and stops early at the same epoch.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <vector>

#include "adam.h"
#include "chorus/chorus.h"
#include "cuda_checkpoint.h"
#include "cuda_stream.h"
#include "cuda_train_options.h"
#include "device_buffer.h"
#include "idx_files.h"
#include "mlp_model.h"
#include "progress.h"
#include "run_summary.h"
#include "shard_sampler.h"

namespace train_mnist_cuda {

class Trainer {
 public:
  // chorus::init() must have been called and `device` be this thread's
  // current CUDA device. Loads the data (every rank reads the files itself;
  // a missing or malformed file throws chorus::Error naming it) and moves it
  // to the GPU.
  //
  // When a run fails, destroy the trainer only after chorus::shutdown():
  // allreduces still in flight write into its gradient buffers.
  Trainer(CudaTrainOptions options, int device, std::ostream& out, bool live_progress);

  // Trains (resuming first when options.resume) until options.epochs or
  // early stopping. Collective: every rank calls it with the same options.
  train_mnist::RunSummary run();

 private:
  struct EpochMetrics {
    double train_loss = 0;
    double train_seconds = 0;
    int64_t train_samples = 0;  // of all ranks
  };
  struct Evaluation {
    double loss = 0;
    double accuracy = 0;
  };
  // One split on the GPU: normalised images [N, 784] and labels [N].
  struct DeviceSplit {
    int64_t size = 0;
    DeviceBuffer<float> images;
    DeviceBuffer<int32_t> labels;
  };

  DeviceSplit upload_split(train_mnist::MnistSplit split);
  void restore_and_synchronize();
  EpochMetrics train_epoch(int64_t epoch);
  // Submits the averaging of `layer`'s weight and bias gradients.
  void submit_gradients(Layer layer);
  void optimizer_step();
  Evaluation evaluate();
  void save_checkpoints(bool best);
  std::vector<uint64_t> parameter_digests();
  double read_stat(int slot);

  CudaTrainOptions options_;
  train_mnist::ProgressPrinter printer_;
  int rank_;
  int size_;
  int device_;
  int max_rows_;
  CudaStream stream_;  // before the GPU members, so destroyed after them
  DeviceSplit train_;
  DeviceSplit test_;
  ShardSampler sampler_;
  MlpModel model_;
  AdamOptimizer adam_;
  std::vector<int32_t> epoch_indices_host_;  // alive while its copy may be queued
  DeviceBuffer<int32_t> epoch_indices_;
  DeviceBuffer<int32_t> test_indices_;
  DeviceBuffer<float> batch_images_;
  DeviceBuffer<int32_t> batch_labels_;
  DeviceBuffer<double> stats_;  // the sums of the loss kernel, slots below
  std::vector<chorus::Handle> pending_;
  TrainingProgress progress_;
};

}  // namespace train_mnist_cuda
