#include "models.h"

#include <torch/nn/functional.h>

#include "example_error.h"

namespace train_mnist {
const char* model_kind_name(ModelKind kind) { return kind == ModelKind::kMlp ? "mlp" : "cnn"; }

ModelKind parse_model_kind(const std::string& name) {
  if (name == "mlp") return ModelKind::kMlp;
  if (name == "cnn") return ModelKind::kCnn;
  fail("Unknown model '" + name + "': expected mlp or cnn");
}

Mlp::Mlp() {
  hidden_ = register_module("hidden", torch::nn::Linear(28 * 28, 128));
  output_ = register_module("output", torch::nn::Linear(128, 10));
}

torch::Tensor Mlp::forward(torch::Tensor images) {
  return output_(torch::relu(hidden_(images.flatten(1))));
}

torch::nn::Sequential Mlp::layers() {
  return torch::nn::Sequential(torch::nn::Flatten(), hidden_, torch::nn::ReLU(), output_);
}

Cnn::Cnn() {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 10, 5)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(10, 20, 5)));
  hidden_ = register_module("hidden", torch::nn::Linear(320, 50));
  output_ = register_module("output", torch::nn::Linear(50, 10));
}

torch::Tensor Cnn::forward(torch::Tensor images) {
  torch::Tensor x = torch::relu(torch::max_pool2d(conv1_(images), 2));  // [N, 10, 12, 12]
  x = torch::relu(torch::max_pool2d(conv2_(x), 2));                     // [N, 20, 4, 4]
  return output_(torch::relu(hidden_(x.flatten(1))));
}

torch::nn::Sequential Cnn::layers() {
  const auto pool = [] { return torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)); };
  return torch::nn::Sequential(conv1_, pool(), torch::nn::ReLU(), conv2_, pool(), torch::nn::ReLU(),
                               torch::nn::Flatten(), hidden_, torch::nn::ReLU(), output_);
}

std::shared_ptr<Classifier> make_model(ModelKind kind) {
  if (kind == ModelKind::kMlp) return std::make_shared<Mlp>();
  return std::make_shared<Cnn>();
}

}  // namespace train_mnist
