// Model parallelism's first half: which consecutive layers of a model each
// pipeline stage holds.
//
// A stage's part is a torch::nn::Sequential that shares the full model's
// modules (no copy) and keeps their names in the full model ("3.weight"
// stays "3.weight"), so parameters, checkpoints and gradient names line up
// with the unsplit model.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

namespace chorus {
namespace torch {

// Stage boundaries: S+1 indices, 0 = b[0] < b[1] < ... < b[S] = layers;
// stage s holds layers [b[s], b[s+1]).
using StageBoundaries = std::vector<int64_t>;

// Balanced by layer count: every stage gets floor(layers / S) layers and the
// first layers % S stages one more. Throws chorus::Error when
// check_stage_count(layers, stages) fails.
StageBoundaries balanced_boundaries(int64_t layers, int stages);
// Throws chorus::Error naming the problem unless `boundaries` describes
// `stages` non-empty consecutive parts covering all `layers`.
void check_boundaries(const StageBoundaries& boundaries, int64_t layers, int stages);

// The part of `model` that stage `stage` holds (modules shared, names kept).
// Empty `boundaries`: balanced_boundaries(model->size(), stages).
::torch::nn::Sequential stage_part(const ::torch::nn::Sequential& model, int stages, int stage,
                                   const StageBoundaries& boundaries = {});
// Same, for a list of modules (named "0", "1", ... as in a Sequential).
::torch::nn::Sequential stage_part(const std::vector<::torch::nn::AnyModule>& layers, int stages,
                                   int stage, const StageBoundaries& boundaries = {});

}  // namespace torch
}  // namespace chorus
