#include "models.h"

#include <sstream>

#include <torch/nn/functional.h>

#include "example_error.h"

namespace train_mnist {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

}  // namespace

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

ModelSignature ModelSignature::of(const Classifier& model) {
  ModelSignature signature;
  signature.kind = model_kind_name(model.kind());
  for (const auto& item : model.named_parameters()) {
    signature.parameters.emplace_back(item.key(), item.value().sizes().vec());
  }
  return signature;
}

std::string ModelSignature::serialize() const {
  std::ostringstream out;
  out << "kind " << kind << "\n";
  for (const auto& [name, shape] : parameters) {
    out << "parameter " << name;
    for (int64_t dim : shape) out << " " << dim;
    out << "\n";
  }
  return out.str();
}

ModelSignature ModelSignature::parse(const std::string& text, const std::string& source) {
  ModelSignature signature;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string tag;
    words >> tag;
    if (tag == "kind" && (words >> signature.kind)) continue;
    std::string name;
    if (tag == "parameter" && (words >> name)) {
      std::vector<int64_t> shape;
      int64_t dim = 0;
      while (words >> dim) shape.push_back(dim);
      if (words.eof()) {
        signature.parameters.emplace_back(name, shape);
        continue;
      }
    }
    fail(source + " has a malformed model signature line '" + line +
         "' (expected 'kind <name>' or 'parameter <name> <dims...>')");
  }
  if (signature.kind.empty()) fail(source + " has a model signature without a model kind");
  return signature;
}

std::string ModelSignature::difference(const ModelSignature& other) const {
  if (kind != other.kind) return "model " + kind + " vs " + other.kind;
  const size_t common = std::min(parameters.size(), other.parameters.size());
  for (size_t i = 0; i < common; ++i) {
    const auto& [name, shape] = parameters[i];
    const auto& [other_name, other_shape] = other.parameters[i];
    if (name != other_name) return "parameter " + std::to_string(i) + " " + name + " vs " + other_name;
    if (shape != other_shape) {
      return "parameter " + name + " " + shape_text(shape) + " vs " + shape_text(other_shape);
    }
  }
  if (parameters.size() != other.parameters.size()) {
    return std::to_string(parameters.size()) + " parameters vs " +
           std::to_string(other.parameters.size());
  }
  return "";
}

}  // namespace train_mnist
