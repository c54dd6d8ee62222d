// What Chorus's allreduce computes from the ranks' floating-point tensors,
// bit for bit, written from the documented order alone (no Chorus code): each
// rank's tensor times the prescale factor (when it is not 1), summed over the
// ranks in rank order, ((t0 + t1) + t2) + ..., then times the result factor
// (an average's postscale / size), each factor rounded to the tensor's dtype
// first (core/runtime/executor.cc, ops/kernels/ordered_reduce.h,
// ops/kernels/scale.h). On 2 ranks the order is moot: t0 + t1 == t1 + t0.
//
// Single-process references of data-parallel training average the replicas'
// gradients with it as DistributedOptimizer does, so that the reference and
// the distributed run take bit-identical paths and a test can demand
// equality. Float32 results of LibTorch depend on the CPU (OpenBLAS picks its
// kernels per processor, and with them the order of the sums inside a matrix
// product), so a tolerance between two different orderings, tuned on one
// machine, fails on another; the same operations on the same tensors in one
// process give the same bits on any machine. Header-only.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace chorus_test {

// sum over r in rank order of (per_rank[r] x prescale), times factor.
inline torch::Tensor chorus_allreduce_sum(const std::vector<torch::Tensor>& per_rank, double prescale,
                                          double factor) {
  const auto scaled = [&](const torch::Tensor& t) {
    return prescale == 1.0 ? t : t * torch::scalar_tensor(prescale, t.options());
  };
  torch::Tensor sum = scaled(per_rank.at(0)).clone();
  for (size_t r = 1; r < per_rank.size(); ++r) sum = sum + scaled(per_rank[r]);
  return factor == 1.0 ? sum : sum * torch::scalar_tensor(factor, sum.options());
}

// DistributedOptimizer's default kAverage over per_rank.size() ranks, or
// with a gradient_predivide_factor f: times 1/f before the sum, f/size after.
inline torch::Tensor chorus_average(const std::vector<torch::Tensor>& per_rank, double predivide = 1.0) {
  const double size = static_cast<double>(per_rank.size());
  return chorus_allreduce_sum(per_rank, 1.0 / predivide, predivide / size);
}

}  // namespace chorus_test
