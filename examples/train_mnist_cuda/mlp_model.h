// The reference MLP (Linear(784, 128), ReLU, Linear(128, 10), log-softmax)
// on one GPU: forward and backward with cuBLAS (the GEMMs) and cuDNN (ReLU
// and log-softmax), on one stream.
//
// Layout. Every matrix is row-major with one sample per row, as in LibTorch:
// X [B, 784], W1 [128, 784], A = X W1^T + b1 [B, 128], H = relu(A) [B, 128],
// W2 [10, 128], Z = H W2^T + b2 [B, 10], P = log_softmax(Z) [B, 10]. cuBLAS
// is column-major: a row-major [r, c] array is, to cuBLAS, the column-major
// [c, r] matrix (its transpose) with leading dimension c. So each product is
// computed transposed, C^T = op(B)^T op(A)^T, reading the same memory:
//   Y = X W^T       [B, out]:  Y^T = W X^T       gemm(T, N, m=out, n=B, k=in,  W, ld in,  X, ld in,  Y, ld out)
//   dW = dY^T X     [out, in]: dW^T = X^T dY     gemm(N, T, m=in,  n=out, k=B, X, ld in,  dY, ld out, dW, ld in)
//   dX = dY W       [B, in]:   dX^T = W^T dY^T   gemm(N, N, m=in,  n=B, k=out, W, ld in,  dY, ld out, dX, ld in)
//
// Gradients (L: the mean loss over the batch's B samples, divided further
// by the accumulation count K; the trainer passes grad_scale = 1 / (B K)):
//   dZ = (softmax(Z) - onehot(y)) * grad_scale          (kernels.h, cross entropy)
//   dW2 = dZ^T H,  db2 = sum over rows of dZ
//   dH = dZ W2
//   dA = dH * [A > 0]                                   (cudnnActivationBackward)
//   dW1 = dA^T X,  db1 = sum over rows of dA
// Chorus's allreduce (average) then divides the sum over ranks by the
// number of ranks, so every rank steps with the gradient of the mean loss
// over all ranks' batches.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "device_buffer.h"
#include "mlp_layout.h"

namespace train_mnist_cuda {

enum class Layer { kHiddenLayer, kOutputLayer };

class MlpModel {
 public:
  // Buffers for batches of up to max_rows samples; work goes on `stream`.
  MlpModel(int max_rows, cudaStream_t stream);
  ~MlpModel();
  MlpModel(const MlpModel&) = delete;
  MlpModel& operator=(const MlpModel&) = delete;

  // The flat arrays of mlp_layout.h (kParameterCount floats each).
  float* parameters() const { return parameters_.get(); }
  float* gradients() const { return gradients_.get(); }
  // Copies to or from the host; both wait for the stream.
  void upload_parameters(const std::vector<float>& host);
  std::vector<float> download_parameters() const;

  // Queues the forward pass of x [rows, 784]; returns the log-probabilities
  // [rows, 10], valid until the next forward.
  const float* forward(const float* x, int rows);
  // Where the loss kernel writes dL/dZ [rows, 10] for backward().
  float* logits_gradient() const { return dlogits_.get(); }

  // Queues the backward pass of the last forward (same x and rows), from
  // logits_gradient(). With accumulate the gradients are added to those
  // already there, else they replace them. After each layer's weight and
  // bias gradients have been queued, calls gradients_queued(layer): the
  // output layer first, then the hidden one, so that the output layer's
  // allreduce can run while the hidden layer's gradients are computed.
  void backward(const float* x, int rows, bool accumulate,
                const std::function<void(Layer)>& gradients_queued);

  // The global L2 norm of all gradients (gradient clipping); waits for the
  // stream.
  float gradient_norm();

  cudaStream_t stream() const { return stream_; }

 private:
  void release_handles();
  // Sets the cuDNN descriptors for `rows` samples (host only, cheap).
  void describe(int rows);

  int max_rows_;
  cudaStream_t stream_;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cudnnTensorDescriptor_t hidden_desc_ = nullptr;  // [rows, 128, 1, 1]
  cudnnTensorDescriptor_t output_desc_ = nullptr;  // [rows, 10, 1, 1]
  cudnnActivationDescriptor_t relu_ = nullptr;
  DeviceBuffer<float> parameters_;
  DeviceBuffer<float> gradients_;
  DeviceBuffer<float> pre_activation_;   // A  [max_rows, 128]
  DeviceBuffer<float> hidden_;           // H  [max_rows, 128]
  DeviceBuffer<float> logits_;           // Z  [max_rows, 10]
  DeviceBuffer<float> log_probs_;        // P  [max_rows, 10]
  DeviceBuffer<float> dlogits_;          // dZ [max_rows, 10]
  DeviceBuffer<float> dhidden_;          // dH [max_rows, 128]
  DeviceBuffer<float> dpre_activation_;  // dA [max_rows, 128]
  DeviceBuffer<float> norm_;             // gradient_norm()'s result
};

}  // namespace train_mnist_cuda
