// The LibTorch front end from an installed Chorus (Chorus::torch): a torch
// allreduce and one DistributedOptimizer step of SGD, each checked against
// values computed here with plain arithmetic from what every rank put in.
// Exit status 0 when every rank's results are right; 1 otherwise.
#include <torch/torch.h>

#include <chorus/torch.h>

#include <cmath>
#include <cstdio>
#include <exception>

#include "private_headers_unreachable.h"

namespace {

constexpr int64_t kWidth = 8;

// Rank r's input at index i: its gradient in the SGD step below.
double input(int r, int64_t i) { return (r + 1) * 0.5 + i; }

int check(const char* what, const torch::Tensor& got, int64_t i, double want) {
  const double value = got[i].item<double>();
  if (std::fabs(value - want) <= 1e-5 * (1.0 + std::fabs(want))) return 0;
  std::fprintf(stderr, "rank %d: %s[%lld] = %.9g, expected %.9g\n", chorus::rank(), what,
               static_cast<long long>(i), value, want);
  return 1;
}

}  // namespace

int main() {
  try {
    chorus::init();
    torch::set_num_threads(1);  // ranks share the cores
    const int rank = chorus::rank(), size = chorus::size();
    int bad = 0;

    // Torch allreduce (sum), out of place.
    torch::Tensor mine = torch::empty({kWidth}, torch::kFloat64);
    for (int64_t i = 0; i < kWidth; ++i) mine[i] = input(rank, i);
    chorus::AllreduceOptions sum;
    sum.op = chorus::ReduceOp::kSum;
    const torch::Tensor total = chorus::torch::allreduce(mine, "consumer.torch_sum", sum);
    for (int64_t i = 0; i < kWidth; ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r) want += input(r, i);
      bad += check("allreduce", total, i, want);
    }

    // One step of SGD on w (all ones on every rank) with loss = sum(w * x):
    // the local gradient is x, so the step uses the ranks' average of x.
    torch::Tensor w = torch::ones({kWidth}, torch::kFloat32).requires_grad_(true);
    torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.1));
    chorus::torch::DistributedOptimizer optimizer(sgd, {{"w", w}});
    optimizer.zero_grad();
    torch::Tensor x = mine.to(torch::kFloat32);
    (w * x).sum().backward();
    optimizer.step();
    for (int64_t i = 0; i < kWidth; ++i) {
      double average = 0;
      for (int r = 0; r < size; ++r) average += input(r, i);
      average /= size;
      bad += check("w after one step", w.detach(), i, 1.0 - 0.1 * average);
    }

    std::printf("torch_consumer rank %d of %d: %s\n", rank, size, bad == 0 ? "OK" : "WRONG");
    chorus::shutdown();
    return bad == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torch_consumer: %s\n", e.what());
    return 1;
  }
}
