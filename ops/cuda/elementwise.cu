#include "ops/cuda/elementwise.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/kernels/half.h"
#include "ops/kernels/integer_scale.h"

namespace chorus {
namespace {

constexpr unsigned kThreads = 256;
// Enough blocks to fill any GPU; longer arrays are covered by grid strides.
constexpr int64_t kMaxBlocks = 8192;

dim3 grid_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

// Each dtype as it is stored and as the host computes with it: 16-bit
// floats in float32, converted by the host's own functions.
struct Float32 {
  using Stored = float;
  using Computed = float;
  __device__ static float load(float value) { return value; }
  __device__ static float store(float value) { return value; }
};
struct Float64 {
  using Stored = double;
  using Computed = double;
  __device__ static double load(double value) { return value; }
  __device__ static double store(double value) { return value; }
};
struct Float16 {
  using Stored = uint16_t;
  using Computed = float;
  __device__ static float load(uint16_t value) { return widen_float16(value); }
  __device__ static uint16_t store(float value) { return narrow_to_float16(value); }
};
struct BFloat16 {
  using Stored = uint16_t;
  using Computed = float;
  __device__ static float load(uint16_t value) { return bfloat16_to_float(value); }
  __device__ static uint16_t store(float value) { return float_to_bfloat16(value); }
};

// No __restrict__: in may equal out (each element is read before written).
template <typename Format>
__global__ void scale_kernel(const typename Format::Stored* in, typename Format::Stored* out, int64_t count,
                             typename Format::Computed factor) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = Format::store(Format::load(in[i]) * factor);
  }
}

// As the host: through double, truncated and saturated.
template <typename T>
__global__ void scale_integer_kernel(const T* in, T* out, int64_t count, double factor) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = scale_integer(in[i], factor);
  }
}

// As the host: widening to int64 keeps divisors beyond T's range right.
template <typename T>
__global__ void divide_kernel(T* data, int64_t count, int64_t divisor) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = static_cast<T>(static_cast<int64_t>(data[i]) / divisor);
  }
}

// Through double, as convert.cc: exact from every dtype; to a 16-bit dtype
// the value (which came from one no wider than float) narrows to float
// exactly and then rounds once.
template <typename From, typename To>
__global__ void convert_kernel(const typename From::Stored* in, typename To::Stored* out, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double value = From::load(in[i]);
    out[i] = To::store(static_cast<typename To::Computed>(value));
  }
}

template <typename Kernel, typename... Args>
cudaError_t launch(Kernel kernel, int64_t count, cudaStream_t stream, Args... args) {
  if (count <= 0) return cudaSuccess;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid_for(count);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

template <typename Format>
cudaError_t scale_as(const void* in, void* out, int64_t count, double factor, cudaStream_t stream) {
  using Stored = typename Format::Stored;
  return launch(scale_kernel<Format>, count, stream, static_cast<const Stored*>(in), static_cast<Stored*>(out), count,
                static_cast<typename Format::Computed>(factor));
}

template <typename T>
cudaError_t scale_integer_as(const void* in, void* out, int64_t count, double factor, cudaStream_t stream) {
  return launch(scale_integer_kernel<T>, count, stream, static_cast<const T*>(in), static_cast<T*>(out), count,
                factor);
}

template <typename T>
cudaError_t divide_as(void* buffer, int64_t count, int64_t divisor, cudaStream_t stream) {
  return launch(divide_kernel<T>, count, stream, static_cast<T*>(buffer), count, divisor);
}

template <typename From, typename To>
cudaError_t convert_as(const void* in, void* out, int64_t count, cudaStream_t stream) {
  return launch(convert_kernel<From, To>, count, stream, static_cast<const typename From::Stored*>(in),
                static_cast<typename To::Stored*>(out), count);
}

template <typename From>
cudaError_t convert_from(const void* in, void* out, DataType to, int64_t count, cudaStream_t stream) {
  switch (to) {
    case DataType::kFloat16: return convert_as<From, Float16>(in, out, count, stream);
    case DataType::kBFloat16: return convert_as<From, BFloat16>(in, out, count, stream);
    case DataType::kFloat32: return convert_as<From, Float32>(in, out, count, stream);
    case DataType::kFloat64: return convert_as<From, Float64>(in, out, count, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_scale(const void* in, void* out, int64_t count, DataType dtype, double factor,
                         cudaStream_t stream) {
  switch (dtype) {
    case DataType::kFloat16: return scale_as<Float16>(in, out, count, factor, stream);
    case DataType::kBFloat16: return scale_as<BFloat16>(in, out, count, factor, stream);
    case DataType::kFloat32: return scale_as<Float32>(in, out, count, factor, stream);
    case DataType::kFloat64: return scale_as<Float64>(in, out, count, factor, stream);
    case DataType::kUInt8: return scale_integer_as<uint8_t>(in, out, count, factor, stream);
    case DataType::kInt8: return scale_integer_as<int8_t>(in, out, count, factor, stream);
    case DataType::kInt16: return scale_integer_as<int16_t>(in, out, count, factor, stream);
    case DataType::kUInt16: return scale_integer_as<uint16_t>(in, out, count, factor, stream);
    case DataType::kInt32: return scale_integer_as<int32_t>(in, out, count, factor, stream);
    case DataType::kInt64: return scale_integer_as<int64_t>(in, out, count, factor, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_divide(void* buffer, int64_t count, DataType dtype, int64_t divisor, cudaStream_t stream) {
  switch (dtype) {
    case DataType::kUInt8: return divide_as<uint8_t>(buffer, count, divisor, stream);
    case DataType::kInt8: return divide_as<int8_t>(buffer, count, divisor, stream);
    case DataType::kInt16: return divide_as<int16_t>(buffer, count, divisor, stream);
    case DataType::kUInt16: return divide_as<uint16_t>(buffer, count, divisor, stream);
    case DataType::kInt32: return divide_as<int32_t>(buffer, count, divisor, stream);
    case DataType::kInt64: return divide_as<int64_t>(buffer, count, divisor, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_convert(const void* in, DataType from, void* out, DataType to, int64_t count,
                           cudaStream_t stream) {
  // Not conversions, or two roundings (the kernels for them exist but never run).
  const bool to_16_bits = to == DataType::kFloat16 || to == DataType::kBFloat16;
  if (from == to || (from == DataType::kFloat64 && to_16_bits)) return cudaErrorInvalidValue;
  switch (from) {
    case DataType::kFloat16: return convert_from<Float16>(in, out, to, count, stream);
    case DataType::kBFloat16: return convert_from<BFloat16>(in, out, to, count, stream);
    case DataType::kFloat32: return convert_from<Float32>(in, out, to, count, stream);
    case DataType::kFloat64: return convert_from<Float64>(in, out, to, count, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace chorus
