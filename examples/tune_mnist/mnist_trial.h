// One trial of tune_mnist: the reference MLP with a hidden width of the
// trial's choosing (784-hidden-10, ReLU, softmax cross-entropy, Adam),
// trained data-parallel within the trial's process set for `budget` epochs
// and scored by its accuracy on the held-out validation images.
//
// A promoted trial continues from the checkpoint its previous rung left:
// <checkpoint-dir>/trial-<id>-epoch-<n>.pt (model and Adam state after n
// epochs), written by the group's first rank and read by the first rank of
// whichever group continues it (the folder must be shared by every rank),
// then broadcast within the set. Files are named by epoch, so a job re-run
// after a kill still finds the state it started from. Without the file the
// trial retrains from scratch and says so in its units (resource_used =
// budget).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "chorus/tune/trial.h"
#include "mnist_idx.h"

namespace tune_mnist {

class WidthMlp : public torch::nn::Module {
 public:
  explicit WidthMlp(int64_t hidden);
  torch::Tensor forward(torch::Tensor images);

 private:
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear output_{nullptr};
};

// The data every trial uses: training, validation (the search's metric) and
// test (only for the final report) images.
struct TuneData {
  train_mnist::MnistData train;
  train_mnist::MnistData validation;
  train_mnist::MnistData test;
};
// The training file's last `validation` images are held out; training uses
// the first `train_limit` of the rest (0: all). Throws chorus::Error naming
// the problem when the file has too few images.
TuneData load_tune_data(const std::string& data_dir, int64_t validation, int64_t train_limit);

std::string checkpoint_path(const std::string& directory, int64_t trial, int64_t epochs);

// Accuracy of `model` on `data`, each member of `set` evaluating every
// set-size-th image and the counts summed over the set (collective).
double accuracy(WidthMlp& model, const train_mnist::MnistData& data, const chorus::ProcessSet& set,
                const std::string& name);

class MnistTrial {
 public:
  MnistTrial(const TuneData& data, std::string checkpoint_dir, uint64_t seed)
      : data_(data), checkpoint_dir_(std::move(checkpoint_dir)), seed_(seed) {}
  // The trial function (every member of the trial's set calls it).
  double operator()(chorus::tune::TrialContext& ctx) const;

 private:
  const TuneData& data_;
  std::string checkpoint_dir_;
  uint64_t seed_;
};

// Loads trial `trial`'s state after `epochs` into a new model on every rank
// of the job (rank 0 reads the file; collective over every rank).
std::shared_ptr<WidthMlp> load_trained_model(const std::string& directory, int64_t trial, int64_t epochs,
                                             int64_t hidden);

}  // namespace tune_mnist
