#include "mlp_model.h"

#include <string>

#include "cuda_check.h"
#include "kernels.h"
#include "stream_event.h"

namespace train_mnist_cuda {
namespace {

// C = A B (+ C when beta is 1) in cuBLAS's column-major terms; see the
// header for how each row-major product maps onto it.
void gemm(cublasHandle_t handle, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k,
          const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  const float alpha = 1.0f;
  CUBLAS_CHECK(cublasSgemm(handle, op_a, op_b, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc));
}

}  // namespace

MlpModel::MlpModel(int max_rows, cudaStream_t stream)
    : max_rows_(max_rows),
      stream_(stream),
      parameters_(kParameterCount),
      gradients_(kParameterCount),
      pre_activation_(static_cast<int64_t>(max_rows) * kHidden),
      hidden_(static_cast<int64_t>(max_rows) * kHidden),
      logits_(static_cast<int64_t>(max_rows) * kClasses),
      log_probs_(static_cast<int64_t>(max_rows) * kClasses),
      dlogits_(static_cast<int64_t>(max_rows) * kClasses),
      dhidden_(static_cast<int64_t>(max_rows) * kHidden),
      dpre_activation_(static_cast<int64_t>(max_rows) * kHidden),
      norm_(1) {
  // A throw below leaves the destructor unrun: release the handles made so
  // far (the buffers, members, free themselves).
  try {
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // Scalars (alpha, beta) come from the host; full FP32 products (no TF32),
    // as LibTorch computes them on the CPU.
    CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST));
    CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    CUDNN_CHECK(cudnnCreate(&cudnn_));
    CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&hidden_desc_));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&output_desc_));
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&relu_));
    CUDNN_CHECK(cudnnSetActivationDescriptor(relu_, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  } catch (...) {
    release_handles();
    throw;
  }
}

MlpModel::~MlpModel() { release_handles(); }

void MlpModel::release_handles() {
  // Nothing here can report an error; the handles go with the process anyway.
  if (relu_) (void)cudnnDestroyActivationDescriptor(relu_);
  if (output_desc_) (void)cudnnDestroyTensorDescriptor(output_desc_);
  if (hidden_desc_) (void)cudnnDestroyTensorDescriptor(hidden_desc_);
  if (cudnn_) (void)cudnnDestroy(cudnn_);
  if (cublas_) (void)cublasDestroy(cublas_);
  relu_ = nullptr;
  output_desc_ = hidden_desc_ = nullptr;
  cudnn_ = nullptr;
  cublas_ = nullptr;
}

void MlpModel::upload_parameters(const std::vector<float>& host) {
  if (static_cast<int64_t>(host.size()) != kParameterCount) {
    throw_internal("MlpModel::upload_parameters: " + std::to_string(host.size()) + " values, expected " +
                   std::to_string(kParameterCount));
  }
  CUDA_CHECK(cudaMemcpyAsync(parameters_.get(), host.data(), parameters_.bytes(), cudaMemcpyHostToDevice,
                             stream_));
  wait_for_stream(stream_);
}

std::vector<float> MlpModel::download_parameters() const {
  std::vector<float> host(static_cast<size_t>(kParameterCount));
  CUDA_CHECK(cudaMemcpyAsync(host.data(), parameters_.get(), parameters_.bytes(), cudaMemcpyDeviceToHost,
                             stream_));
  wait_for_stream(stream_);
  return host;
}

void MlpModel::describe(int rows) {
  if (rows < 1 || rows > max_rows_) {
    throw_internal("MlpModel: a batch of " + std::to_string(rows) + " rows, expected 1 to " +
                   std::to_string(max_rows_));
  }
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(hidden_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, rows, kHidden, 1, 1));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(output_desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, rows, kClasses, 1, 1));
}

const float* MlpModel::forward(const float* x, int rows) {
  describe(rows);
  const float* w1 = parameters_.get() + kHiddenWeight.offset;
  const float* b1 = parameters_.get() + kHiddenBias.offset;
  const float* w2 = parameters_.get() + kOutputWeight.offset;
  const float* b2 = parameters_.get() + kOutputBias.offset;
  const float one = 1.0f;
  const float zero = 0.0f;

  // A = X W1^T + b1; H = relu(A).
  gemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, kHidden, rows, kInputs, w1, kInputs, x, kInputs, 0.0f,
       pre_activation_.get(), kHidden);
  launch_add_bias(pre_activation_.get(), b1, rows, kHidden, stream_);
  CUDNN_CHECK(cudnnActivationForward(cudnn_, relu_, &one, hidden_desc_, pre_activation_.get(), &zero,
                                     hidden_desc_, hidden_.get()));
  // Z = H W2^T + b2; P = log_softmax(Z) over each row's 10 classes.
  gemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, kClasses, rows, kHidden, w2, kHidden, hidden_.get(), kHidden, 0.0f,
       logits_.get(), kClasses);
  launch_add_bias(logits_.get(), b2, rows, kClasses, stream_);
  CUDNN_CHECK(cudnnSoftmaxForward(cudnn_, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one, output_desc_,
                                  logits_.get(), &zero, output_desc_, log_probs_.get()));
  return log_probs_.get();
}

void MlpModel::backward(const float* x, int rows, bool accumulate,
                        const std::function<void(Layer)>& gradients_queued) {
  describe(rows);
  const float* w2 = parameters_.get() + kOutputWeight.offset;
  float* dw1 = gradients_.get() + kHiddenWeight.offset;
  float* db1 = gradients_.get() + kHiddenBias.offset;
  float* dw2 = gradients_.get() + kOutputWeight.offset;
  float* db2 = gradients_.get() + kOutputBias.offset;
  const float beta = accumulate ? 1.0f : 0.0f;
  const float one = 1.0f;
  const float zero = 0.0f;

  // Output layer: dW2 = dZ^T H [10, 128], db2 = column sums of dZ.
  gemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, kHidden, kClasses, rows, hidden_.get(), kHidden, dlogits_.get(),
       kClasses, beta, dw2, kHidden);
  launch_bias_gradient(dlogits_.get(), rows, kClasses, accumulate, db2, stream_);
  gradients_queued(Layer::kOutputLayer);

  // Back through it: dH = dZ W2 [rows, 128]; dA = dH where A > 0.
  gemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, kHidden, rows, kClasses, w2, kHidden, dlogits_.get(), kClasses, 0.0f,
       dhidden_.get(), kHidden);
  CUDNN_CHECK(cudnnActivationBackward(cudnn_, relu_, &one, hidden_desc_, hidden_.get(), hidden_desc_,
                                      dhidden_.get(), hidden_desc_, pre_activation_.get(), &zero, hidden_desc_,
                                      dpre_activation_.get()));
  // Hidden layer: dW1 = dA^T X [128, 784], db1 = column sums of dA.
  gemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, kInputs, kHidden, rows, x, kInputs, dpre_activation_.get(), kHidden,
       beta, dw1, kInputs);
  launch_bias_gradient(dpre_activation_.get(), rows, kHidden, accumulate, db1, stream_);
  gradients_queued(Layer::kHiddenLayer);
}

float MlpModel::gradient_norm() {
  // The result goes to device memory and is read after a sleeping wait: in
  // host pointer mode cuBLAS would wait for it by itself, spinning.
  CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_DEVICE));
  const cublasStatus_t status = cublasSnrm2(cublas_, static_cast<int>(kParameterCount), gradients_.get(), 1,
                                            norm_.get());
  CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST));
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw_internal(cublas_error_message("cublasSnrm2(gradients)", __FILE__, __LINE__, status));
  }
  float norm = 0.0f;
  CUDA_CHECK(cudaMemcpyAsync(&norm, norm_.get(), sizeof(float), cudaMemcpyDeviceToHost, stream_));
  wait_for_stream(stream_);
  return norm;
}

}  // namespace train_mnist_cuda
