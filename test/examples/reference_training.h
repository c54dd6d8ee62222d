// train_mnist's training computed in one process, without Chorus, the way a
// distributed run computes it, so that tests can compare the two bit for
// bit instead of within a tolerance.
//
// Why not against the single-process run with the combined batch (batch
// 128 on 1 rank for 2 ranks' 64): that run adds the same numbers in another
// order, and after tens of Adam steps the rounding differences have grown to
// ~1e-4 by an amount that depends on the CPU (OpenBLAS picks its matrix
// kernels, and with them the order of the sums, per processor): a bound
// tuned on one machine failed on another. Here every replica's batch goes
// through the same operations on the same tensors as on its rank, and the
// replicas' gradients are averaged as Chorus averages them
// (chorus_average.h); same operations, same bits, on any machine.
//
// What is mirrored, from the documented behaviour:
//  - the model: torch::manual_seed(seed), make_model(kind);
//  - the data: the sampler's permutation of (seed, epoch) (one replica's
//    DistributedSampler deals it whole), replica r training on its elements
//    r, r + R, r + 2R, ... (the last N % R dropped), in batches of
//    batch_size, the last one partial;
//  - data parallelism (1 stage): each replica's mean cross-entropy of its
//    batch, backward, the replicas' gradients averaged, one Adam step at
//    lr x R;
//  - pipelines (S > 1 stages, R = size / S pipelines): each batch's whole
//    micro-batches only, split by chunk(M); each micro-batch's loss / M
//    backward in micro-batch order (both schedules run the backwards in that
//    order), accumulating into .grad; the pipelines' sums averaged as above;
//  - evaluation: replica r takes test samples r, r + R, ... in chunks of
//    1000 (summed cross-entropy and hits in float64, chunk by chunk), the
//    replicas' sums added in rank order, divided by the test set's size.
// Options the reference does not mirror (accumulate, clipping, compression,
// mixed precision, warm-up, resume, elastic) are refused.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/optim/adam.h>

#include "mnist_idx.h"
#include "models.h"
#include "run_summary.h"
#include "train_options.h"

namespace train_mnist_test {

struct ReferenceRun {
  std::shared_ptr<train_mnist::Classifier> model;
  std::unique_ptr<torch::optim::Adam> adam;
  double test_loss = 0;
  double test_accuracy = 0;
  // Indexed by rank, as in train_mnist's summary: the digest (XXH3 of each
  // parameter's bytes, then of those hashes) of the whole model, or in a
  // pipeline of the rank's stage.
  std::vector<uint64_t> parameter_digests;
};

// Trains as `options` would on `world_size` ranks. Throws std::invalid_argument
// for an option it does not mirror.
ReferenceRun train_reference(const train_mnist::TrainOptions& options, int world_size,
                             const train_mnist::MnistData& train, const train_mnist::MnistData& test);

// The summary train_mnist --summary-json would hold for the fields the
// reference knows (world size, layout, epochs, test loss and accuracy,
// digests).
train_mnist::RunSummary reference_summary(const train_mnist::TrainOptions& options, int world_size,
                                          const ReferenceRun& run);

}  // namespace train_mnist_test
