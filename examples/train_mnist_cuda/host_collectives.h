// Small collectives on host memory through Chorus's public API: metrics,
// rank 0's outcome and state, and the parameter digests. Every rank calls
// each with the same name; errors throw chorus::Error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace train_mnist_cuda {

// The sum over ranks of each rank's `values` (same count on every rank).
std::vector<double> allreduce_sum(const std::vector<double>& values, const std::string& name);

// Rank `root`'s value on every rank.
std::string broadcast_string(const std::string& value, int root, const std::string& name);
int64_t broadcast_int(int64_t value, int root, const std::string& name);
double broadcast_double(double value, int root, const std::string& name);
// In place; every rank's vector must already hold as many values as root's.
void broadcast_floats(std::vector<float>& values, int root, const std::string& name);

// Every rank's value, indexed by rank.
std::vector<uint64_t> allgather_u64(uint64_t value, const std::string& name);

// The minimum over ranks (agreement on a yes/no: 1 on every rank, or 0).
int allreduce_min(int value, const std::string& name);

}  // namespace train_mnist_cuda
