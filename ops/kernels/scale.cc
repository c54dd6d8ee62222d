// Scaling kernels. Floating types multiply by the factor in their own
// precision (float16/bfloat16 in float32); integer types by Horovod's rule
// (integer_scale.h: through double, truncated, saturated at the type's
// bounds). An integer average divides instead (divide()), exactly.
#include "ops/kernels/scale.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "ops/kernels/half.h"
#include "ops/kernels/integer_scale.h"

namespace chorus {
namespace {

// As in reduce.cc: constant-length inner blocks let GCC vectorise at -O2.
constexpr int64_t kBlock = 64;

// Two kernels, because in may equal out: the in-place one has one pointer and
// so no aliasing question; the other promises the compiler no overlap.
template <typename T>
void scale_in_place(T* data, int64_t count, T factor) {
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) data[i + j] = data[i + j] * factor;
  }
  for (; i < count; ++i) data[i] = data[i] * factor;
}

template <typename T>
void scale_copy(const T* __restrict in, T* __restrict out, int64_t count, T factor) {
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) out[i + j] = in[i + j] * factor;
  }
  for (; i < count; ++i) out[i] = in[i] * factor;
}

template <typename T>
void scale_as(const void* in, void* out, int64_t count, T factor) {
  if (in == out) {
    scale_in_place(static_cast<T*>(out), count, factor);
  } else {
    scale_copy(static_cast<const T*>(in), static_cast<T*>(out), count, factor);
  }
}

// Element by element, so in == out is safe without a second kernel.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void scale_half(const void* in, void* out, int64_t count, float factor) {
  const auto* src = static_cast<const uint16_t*>(in);
  auto* dst = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < count; ++i) dst[i] = FromFloat(ToFloat(src[i]) * factor);
}

// Element by element, so in == out is safe. A factor of 1 copies, so that
// int64 values beyond 2^53 (which double cannot hold) pass unchanged.
template <typename T>
Status scale_integer_as(const void* in, void* out, int64_t count, double factor) {
  if (factor == 1.0) {
    if (in != out && count > 0) std::memmove(out, in, static_cast<size_t>(count) * sizeof(T));
    return Status::OK();
  }
  if (!std::isfinite(factor)) {
    return Status::InvalidArgument("scale: an integer tensor needs a finite factor, got " + std::to_string(factor));
  }
  const auto* src = static_cast<const T*>(in);
  auto* dst = static_cast<T*>(out);
  for (int64_t i = 0; i < count; ++i) dst[i] = scale_integer(src[i], factor);
  return Status::OK();
}

// Integer division truncates toward zero in C++, which is what the integer
// kAverage promises. Widening to int64 keeps divisors beyond T's range right.
template <typename T>
void divide_as(void* buffer, int64_t count, int64_t divisor) {
  auto* data = static_cast<T*>(buffer);
  for (int64_t i = 0; i < count; ++i) data[i] = static_cast<T>(static_cast<int64_t>(data[i]) / divisor);
}

Status check_buffer(const char* fn, const void* a, const void* b, int64_t count, DataType dtype) {
  if (static_cast<int>(dtype) >= kNumDataTypes) {
    return Status::InvalidArgument(std::string(fn) + ": invalid dtype " + std::to_string(static_cast<int>(dtype)));
  }
  if (count < 0) {
    return Status::InvalidArgument(std::string(fn) + ": count must not be negative, got " + std::to_string(count));
  }
  if (count > 0 && (a == nullptr || b == nullptr)) {
    return Status::InvalidArgument(std::string(fn) + ": null buffer with count " + std::to_string(count));
  }
  return Status::OK();
}

}  // namespace

Status scale(const void* in, void* out, int64_t count, DataType dtype, double factor) {
  CHORUS_RETURN_IF_ERROR(check_buffer("scale", in, out, count, dtype));
  switch (dtype) {
    case DataType::kFloat32: scale_as<float>(in, out, count, static_cast<float>(factor)); break;
    case DataType::kFloat64: scale_as<double>(in, out, count, factor); break;
    case DataType::kFloat16:
      scale_half<float16_to_float, float_to_float16>(in, out, count, static_cast<float>(factor));
      break;
    case DataType::kBFloat16:
      scale_half<bfloat16_to_float, float_to_bfloat16>(in, out, count, static_cast<float>(factor));
      break;
    case DataType::kUInt8: return scale_integer_as<uint8_t>(in, out, count, factor);
    case DataType::kInt8: return scale_integer_as<int8_t>(in, out, count, factor);
    case DataType::kInt16: return scale_integer_as<int16_t>(in, out, count, factor);
    case DataType::kUInt16: return scale_integer_as<uint16_t>(in, out, count, factor);
    case DataType::kInt32: return scale_integer_as<int32_t>(in, out, count, factor);
    case DataType::kInt64: return scale_integer_as<int64_t>(in, out, count, factor);
    case DataType::kBool:
      if (factor != 1.0) {
        return Status::InvalidArgument("scale: dtype 'bool' can only be scaled by 1, got " + std::to_string(factor));
      }
      if (in != out && count > 0) std::memmove(out, in, static_cast<size_t>(count));
      break;
  }
  return Status::OK();
}

Status divide(void* buffer, int64_t count, DataType dtype, int64_t divisor) {
  CHORUS_RETURN_IF_ERROR(check_buffer("divide", buffer, buffer, count, dtype));
  if (divisor <= 0) {
    return Status::InvalidArgument("divide: divisor must be positive, got " + std::to_string(divisor));
  }
  switch (dtype) {
    case DataType::kUInt8: divide_as<uint8_t>(buffer, count, divisor); break;
    case DataType::kInt8: divide_as<int8_t>(buffer, count, divisor); break;
    case DataType::kInt16: divide_as<int16_t>(buffer, count, divisor); break;
    case DataType::kUInt16: divide_as<uint16_t>(buffer, count, divisor); break;
    case DataType::kInt32: divide_as<int32_t>(buffer, count, divisor); break;
    case DataType::kInt64: divide_as<int64_t>(buffer, count, divisor); break;
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return scale(buffer, buffer, count, dtype, 1.0 / static_cast<double>(divisor));
    case DataType::kBool:
      return Status::InvalidArgument("divide: dtype 'bool' cannot be divided");
  }
  return Status::OK();
}

}  // namespace chorus
