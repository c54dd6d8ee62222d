// Adam on the GPU, as torch::optim::Adam computes it (no weight decay, no
// AMSGrad), over the flat parameter array of mlp_layout.h. Per element, at
// step t (from 1), with g the averaged gradient times grad_scale:
//   m = beta1 m + (1 - beta1) g
//   v = beta2 v + (1 - beta2) g^2
//   p -= (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// The bias corrections are computed on the host in double, once per step.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "device_buffer.h"

namespace train_mnist_cuda {

struct AdamSettings {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

// The bias corrections of step t: 1 - beta1^t and sqrt(1 - beta2^t).
struct AdamCorrections {
  double first;
  double second_sqrt;
};
AdamCorrections adam_corrections(const AdamSettings& settings, int64_t step);

class AdamOptimizer {
 public:
  // m and v start at zero (queued on `stream`).
  AdamOptimizer(AdamSettings settings, int64_t count, cudaStream_t stream);

  // One step over `count` parameters; queued on the stream, never waits.
  // grad_scale multiplies the gradients first (gradient clipping; else 1).
  void step(float* parameters, const float* gradients, float grad_scale);

  int64_t steps() const { return step_; }
  // For checkpoints: copies of m and v (waits for the stream), and restoring them.
  std::vector<float> download_m() const;
  std::vector<float> download_v() const;
  void restore(int64_t step, const std::vector<float>& m, const std::vector<float>& v);

 private:
  AdamSettings settings_;
  int64_t count_;
  cudaStream_t stream_;
  int64_t step_ = 0;
  DeviceBuffer<float> m_;
  DeviceBuffer<float> v_;
};

}  // namespace train_mnist_cuda
