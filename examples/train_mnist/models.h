// The models train_mnist can train (their checkpoints carry
// chorus::torch::ModelSignature, labelled with model_kind_name()).
#pragma once

#include <memory>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

namespace train_mnist {

enum class ModelKind { kMlp, kCnn };
// "mlp", "cnn"; parse_model_kind throws chorus::Error naming the bad value.
const char* model_kind_name(ModelKind kind);
ModelKind parse_model_kind(const std::string& name);

// A classifier of [N, 1, 28, 28] images into 10 logits.
class Classifier : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor images) = 0;
  virtual ModelKind kind() const = 0;
  // The same computation as forward(), as a Sequential of this model's own
  // modules (shared, not copied) and stateless steps (flatten, ReLU,
  // pooling): what pipeline parallelism splits into stages.
  virtual torch::nn::Sequential layers() = 0;
};

// The reference model: Linear(784, 128) -> ReLU -> Linear(128, 10).
class Mlp : public Classifier {
 public:
  Mlp();
  torch::Tensor forward(torch::Tensor images) override;
  ModelKind kind() const override { return ModelKind::kMlp; }
  torch::nn::Sequential layers() override;  // Flatten, hidden, ReLU, output

 private:
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear output_{nullptr};
};

// A small CNN: two 5x5 convolutions (10 and 20 channels), each followed by
// 2x2 max pooling and ReLU, then Linear(320, 50) -> ReLU -> Linear(50, 10).
// No dropout, so a resumed run replays exactly.
class Cnn : public Classifier {
 public:
  Cnn();
  torch::Tensor forward(torch::Tensor images) override;
  ModelKind kind() const override { return ModelKind::kCnn; }
  // conv1, MaxPool, ReLU, conv2, MaxPool, ReLU, Flatten, hidden, ReLU, output
  torch::nn::Sequential layers() override;

 private:
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::Conv2d conv2_{nullptr};
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear output_{nullptr};
};

// Parameters are initialised from LibTorch's global generator (seed it first).
std::shared_ptr<Classifier> make_model(ModelKind kind);

}  // namespace train_mnist
