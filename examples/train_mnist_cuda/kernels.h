// The small CUDA kernels of train_mnist_cuda (kernels.cu); cuBLAS and cuDNN
// do the rest (mlp_model.cc). Every matrix is row-major, one sample per row
// (mlp_layout.h). Each launcher queues its kernel on `stream` and checks the
// launch; it never waits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace train_mnist_cuda {

// x[i][:] = images[indices[i]][:] and y[i] = labels[indices[i]] for i < rows:
// a batch gathered from the preloaded set (images: [N, features]).
void launch_gather_batch(const float* images, const int32_t* labels, const int32_t* indices,
                         int rows, int features, float* x, int32_t* y, cudaStream_t stream);

// y[i][j] += bias[j] for a [rows, cols] matrix.
void launch_add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream);

// dbias[j] = sum_i dy[i][j] (or += when accumulate): the gradient of a bias
// that was added to every row.
void launch_bias_gradient(const float* dy, int rows, int cols, bool accumulate, float* dbias,
                          cudaStream_t stream);

// Softmax cross-entropy from log-probabilities (cuDNN's log-softmax):
//   loss_i = -log_probs[i][labels[i]]
//   *loss_sum += sum_i loss_i, and *batch_loss_sum too when not null
//   *correct += number of rows whose largest log-probability is the label
//               (when not null; ties go to the lowest class, as argmax)
//   dlogits[i][c] = (exp(log_probs[i][c]) - [c == labels[i]]) * grad_scale
//               (when not null): d(grad_scale * sum_i loss_i) / d logits,
//               since d loss_i / d logits[i][c] = softmax_c - onehot_c.
// The sums are double, accumulated with atomics across blocks.
void launch_cross_entropy(const float* log_probs, const int32_t* labels, int rows, int classes,
                          float grad_scale, float* dlogits, double* loss_sum, double* batch_loss_sum,
                          double* correct, cudaStream_t stream);

}  // namespace train_mnist_cuda
