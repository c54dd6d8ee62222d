#include "chorus/torch/checkpoint/model_signature.h"

#include <algorithm>
#include <sstream>

#include "chorus/status.h"

namespace chorus {
namespace torch {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

TensorSignature signature_of(const char* kind, const std::string& name, const ::torch::Tensor& t) {
  return {kind, name, t.sizes().vec(), std::string(c10::toString(t.scalar_type()))};
}

}  // namespace

ModelSignature ModelSignature::of(const ::torch::nn::Module& module, const std::string& label) {
  ModelSignature signature;
  signature.model = label.empty() ? module.name() : label;
  for (const auto& item : module.named_parameters()) {
    signature.tensors.push_back(signature_of("parameter", item.key(), item.value()));
  }
  for (const auto& item : module.named_buffers()) {
    signature.tensors.push_back(signature_of("buffer", item.key(), item.value()));
  }
  return signature;
}

std::string ModelSignature::serialize() const {
  std::ostringstream out;
  out << "model " << model << "\n";
  for (const TensorSignature& t : tensors) {
    out << t.kind << " " << t.name << " " << t.dtype;
    for (int64_t dim : t.shape) out << " " << dim;
    out << "\n";
  }
  return out.str();
}

ModelSignature ModelSignature::parse(const std::string& text, const std::string& source) {
  ModelSignature signature;
  bool has_model = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("model ", 0) == 0 && !has_model) {
      signature.model = line.substr(6);
      has_model = true;
      continue;
    }
    std::istringstream words(line);
    TensorSignature t;
    if ((words >> t.kind) && (t.kind == "parameter" || t.kind == "buffer") && (words >> t.name) &&
        (words >> t.dtype)) {
      int64_t dim = 0;
      while (words >> dim) t.shape.push_back(dim);
      if (words.eof()) {
        signature.tensors.push_back(std::move(t));
        continue;
      }
    }
    throw Error(Status::InvalidArgument(
        source + " has a malformed model signature line '" + line +
        "' (expected 'model <label>' or 'parameter|buffer <name> <dtype> <dims...>')"));
  }
  if (!has_model) {
    throw Error(Status::InvalidArgument(source + " has a model signature without a 'model' line"));
  }
  return signature;
}

std::string ModelSignature::difference(const ModelSignature& other) const {
  if (model != other.model) return "model " + model + " vs " + other.model;
  const size_t common = std::min(tensors.size(), other.tensors.size());
  for (size_t i = 0; i < common; ++i) {
    const TensorSignature& a = tensors[i];
    const TensorSignature& b = other.tensors[i];
    if (a.kind != b.kind || a.name != b.name) {
      return "tensor " + std::to_string(i) + " " + a.kind + " " + a.name + " vs " + b.kind + " " + b.name;
    }
    if (a.shape != b.shape) return a.kind + " " + a.name + " " + shape_text(a.shape) + " vs " + shape_text(b.shape);
    if (a.dtype != b.dtype) return a.kind + " " + a.name + " dtype " + a.dtype + " vs " + b.dtype;
  }
  if (tensors.size() != other.tensors.size()) {
    return std::to_string(tensors.size()) + " parameters and buffers vs " +
           std::to_string(other.tensors.size());
  }
  return "";
}

}  // namespace torch
}  // namespace chorus
