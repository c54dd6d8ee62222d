#include "adam.h"

#include <cmath>
#include <string>

#include "cuda_check.h"
#include "stream_event.h"

namespace train_mnist_cuda {
namespace {

constexpr int kThreads = 256;

__global__ void adam_kernel(float* parameters, const float* gradients, float* m, float* v, int64_t count,
                            float step_size, float beta1, float beta2, float eps, float correction2_sqrt,
                            float grad_scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gradients[i] * grad_scale;
    const float m_i = beta1 * m[i] + (1.0f - beta1) * g;
    const float v_i = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = m_i;
    v[i] = v_i;
    parameters[i] -= step_size * m_i / (sqrtf(v_i) / correction2_sqrt + eps);
  }
}

std::vector<float> download(const DeviceBuffer<float>& buffer, cudaStream_t stream) {
  std::vector<float> host(static_cast<size_t>(buffer.count()));
  CUDA_CHECK(cudaMemcpyAsync(host.data(), buffer.get(), buffer.bytes(), cudaMemcpyDeviceToHost, stream));
  wait_for_stream(stream);
  return host;
}

}  // namespace

AdamCorrections adam_corrections(const AdamSettings& settings, int64_t step) {
  const double t = static_cast<double>(step);
  return {1.0 - std::pow(settings.beta1, t), std::sqrt(1.0 - std::pow(settings.beta2, t))};
}

AdamOptimizer::AdamOptimizer(AdamSettings settings, int64_t count, cudaStream_t stream)
    : settings_(settings), count_(count), stream_(stream), m_(count), v_(count) {
  CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, m_.bytes(), stream_));
  CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), stream_));
}

void AdamOptimizer::step(float* parameters, const float* gradients, float grad_scale) {
  ++step_;
  const AdamCorrections corrections = adam_corrections(settings_, step_);
  const int64_t blocks = (count_ + kThreads - 1) / kThreads;
  adam_kernel<<<static_cast<int>(blocks < 4096 ? blocks : 4096), kThreads, 0, stream_>>>(
      parameters, gradients, m_.get(), v_.get(), count_, static_cast<float>(settings_.lr / corrections.first),
      static_cast<float>(settings_.beta1), static_cast<float>(settings_.beta2), static_cast<float>(settings_.eps),
      static_cast<float>(corrections.second_sqrt), grad_scale);
  CUDA_CHECK_LAUNCH("adam_kernel");
}

std::vector<float> AdamOptimizer::download_m() const { return download(m_, stream_); }
std::vector<float> AdamOptimizer::download_v() const { return download(v_, stream_); }

void AdamOptimizer::restore(int64_t step, const std::vector<float>& m, const std::vector<float>& v) {
  if (static_cast<int64_t>(m.size()) != count_ || static_cast<int64_t>(v.size()) != count_) {
    throw_internal("AdamOptimizer::restore: " + std::to_string(m.size()) + " and " + std::to_string(v.size()) +
                   " moments, expected " + std::to_string(count_) + " each");
  }
  step_ = step;
  CUDA_CHECK(cudaMemcpyAsync(m_.get(), m.data(), m_.bytes(), cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemcpyAsync(v_.get(), v.data(), v_.bytes(), cudaMemcpyHostToDevice, stream_));
  // The host vectors may go away once this returns.
  wait_for_stream(stream_);
}

}  // namespace train_mnist_cuda
