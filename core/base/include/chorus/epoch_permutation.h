// The order in which every rank visits a dataset in one epoch, the same on
// every rank, in every run and with every standard library: what a
// distributed sampler deals out (chorus::torch::DistributedSampler, and
// programs without LibTorch such as examples/train_mnist_cuda).
#pragma once

#include <cstdint>
#include <vector>

namespace chorus {

// A permutation of [0, n) that depends only on (seed, epoch): Fisher-Yates
// over std::mt19937_64 (whose output the C++ standard fixes), seeded with
// SplitMix64(seed ^ SplitMix64(epoch)), drawing bounded integers by
// rejection (std::uniform_int_distribution's algorithm varies between
// libraries). n = 0 gives an empty permutation; a negative n throws
// chorus::Error (InvalidArgument).
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace chorus
