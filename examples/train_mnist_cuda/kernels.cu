#include "kernels.h"

#include "cuda_check.h"

namespace train_mnist_cuda {
namespace {

constexpr int kThreads = 256;
// One thread walks a whole row of the cross-entropy: meant for few classes (MNIST: 10).
constexpr int kMaxClasses = 32;

int blocks_for(int64_t items) { return static_cast<int>((items + kThreads - 1) / kThreads); }

__global__ void gather_batch_kernel(const float* images, const int32_t* labels, const int32_t* indices,
                                    int rows, int features, float* x, int32_t* y) {
  const int64_t total = static_cast<int64_t>(rows) * features;
  for (int64_t at = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; at < total;
       at += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = at / features;
    const int64_t col = at % features;
    const int64_t source = indices[row];
    x[at] = images[source * features + col];
    if (col == 0) y[row] = labels[source];
  }
}

__global__ void add_bias_kernel(float* y, const float* bias, int rows, int cols) {
  const int64_t total = static_cast<int64_t>(rows) * cols;
  for (int64_t at = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; at < total;
       at += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[at] += bias[at % cols];
  }
}

// One thread per column: consecutive threads read consecutive addresses of a row.
__global__ void bias_gradient_kernel(const float* dy, int rows, int cols, bool accumulate, float* dbias) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  float sum = 0.0f;
  for (int row = 0; row < rows; ++row) sum += dy[static_cast<int64_t>(row) * cols + col];
  dbias[col] = accumulate ? dbias[col] + sum : sum;
}

// One thread per row; each block sums its rows' losses and hits in shared
// memory and adds them to the totals with one atomic each.
__global__ void cross_entropy_kernel(const float* log_probs, const int32_t* labels, int rows, int classes,
                                     float grad_scale, float* dlogits, double* loss_sum,
                                     double* batch_loss_sum, double* correct) {
  __shared__ double block_loss[kThreads];
  __shared__ double block_correct[kThreads];
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  double loss = 0.0;
  double hit = 0.0;
  if (row < rows) {
    const float* lp = log_probs + static_cast<int64_t>(row) * classes;
    const int label = labels[row];
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (lp[c] > lp[best]) best = c;
    }
    loss = -static_cast<double>(lp[label]);
    hit = best == label ? 1.0 : 0.0;
    if (dlogits != nullptr) {
      float* d = dlogits + static_cast<int64_t>(row) * classes;
      for (int c = 0; c < classes; ++c) d[c] = (expf(lp[c]) - (c == label ? 1.0f : 0.0f)) * grad_scale;
    }
  }
  block_loss[threadIdx.x] = loss;
  block_correct[threadIdx.x] = hit;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      block_loss[threadIdx.x] += block_loss[threadIdx.x + half];
      block_correct[threadIdx.x] += block_correct[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(loss_sum, block_loss[0]);
    if (batch_loss_sum != nullptr) atomicAdd(batch_loss_sum, block_loss[0]);
    if (correct != nullptr) atomicAdd(correct, block_correct[0]);
  }
}

// Grid-stride kernels need no more blocks than keep the GPU busy.
int capped_blocks(int64_t items) { return blocks_for(items) < 4096 ? blocks_for(items) : 4096; }

}  // namespace

void launch_gather_batch(const float* images, const int32_t* labels, const int32_t* indices, int rows,
                         int features, float* x, int32_t* y, cudaStream_t stream) {
  if (rows <= 0) return;
  gather_batch_kernel<<<capped_blocks(static_cast<int64_t>(rows) * features), kThreads, 0, stream>>>(
      images, labels, indices, rows, features, x, y);
  CUDA_CHECK_LAUNCH("gather_batch_kernel");
}

void launch_add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0) return;
  add_bias_kernel<<<capped_blocks(static_cast<int64_t>(rows) * cols), kThreads, 0, stream>>>(y, bias, rows,
                                                                                             cols);
  CUDA_CHECK_LAUNCH("add_bias_kernel");
}

void launch_bias_gradient(const float* dy, int rows, int cols, bool accumulate, float* dbias,
                          cudaStream_t stream) {
  bias_gradient_kernel<<<blocks_for(cols), kThreads, 0, stream>>>(dy, rows, cols, accumulate, dbias);
  CUDA_CHECK_LAUNCH("bias_gradient_kernel");
}

void launch_cross_entropy(const float* log_probs, const int32_t* labels, int rows, int classes,
                          float grad_scale, float* dlogits, double* loss_sum, double* batch_loss_sum,
                          double* correct, cudaStream_t stream) {
  if (classes < 1 || classes > kMaxClasses) {
    throw_internal("launch_cross_entropy: " + std::to_string(classes) + " classes, expected 1 to " +
                   std::to_string(kMaxClasses));
  }
  if (rows <= 0) return;
  cross_entropy_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(log_probs, labels, rows, classes, grad_scale,
                                                                  dlogits, loss_sum, batch_loss_sum, correct);
  CUDA_CHECK_LAUNCH("cross_entropy_kernel");
}

}  // namespace train_mnist_cuda
