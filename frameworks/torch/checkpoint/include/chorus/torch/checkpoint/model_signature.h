// What ties a checkpoint to a model: a label for the model and every
// parameter's and buffer's name, shape and dtype, in the module's order.
// A checkpoint whose signature differs from the model it is loaded into is
// refused with the first difference named.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>

namespace chorus {
namespace torch {

struct TensorSignature {
  std::string kind;  // "parameter" or "buffer"
  std::string name;  // the module's dotted name, e.g. "hidden.weight"
  std::vector<int64_t> shape;
  std::string dtype;  // LibTorch's name, e.g. "Float"

  bool operator==(const TensorSignature& other) const {
    return kind == other.kind && name == other.name && shape == other.shape && dtype == other.dtype;
  }
};

struct ModelSignature {
  std::string model;  // a label; ModelSignature::of's default is module.name()
  std::vector<TensorSignature> tensors;  // parameters, then buffers

  // Of `module` (recursively). `label`: the model's name in messages and
  // comparisons; empty takes module.name() (its C++ class name).
  static ModelSignature of(const ::torch::nn::Module& module, const std::string& label = "");
  // One line per entry: "model <label>", "<kind> <name> <dtype> <dims...>".
  std::string serialize() const;
  // Throws chorus::Error naming `source` when `text` is not a signature.
  static ModelSignature parse(const std::string& text, const std::string& source);
  // Empty when equal; otherwise the first difference, this vs other, e.g.
  // "model mlp vs cnn", "parameter hidden.weight [64, 784] vs [128, 784]",
  // "parameter hidden.weight dtype Double vs Float".
  std::string difference(const ModelSignature& other) const;
};

}  // namespace torch
}  // namespace chorus
