#include "ops/kernels/convert.h"

#include <cstring>
#include <string>

#include "ops/kernels/half.h"

namespace chorus {
namespace {

// Every floating dtype goes through double, which holds each of them exactly;
// narrowing to 16 bits then rounds once (float -> half), as a direct
// conversion would, since float32 -> double is exact.
double load(const void* in, DataType dtype, int64_t i) {
  switch (dtype) {
    case DataType::kFloat16: return float16_to_float(static_cast<const uint16_t*>(in)[i]);
    case DataType::kBFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(in)[i]);
    case DataType::kFloat32: return static_cast<const float*>(in)[i];
    default: return static_cast<const double*>(in)[i];
  }
}

void store(void* out, DataType dtype, int64_t i, double value) {
  switch (dtype) {
    // double -> float rounds once; float -> half then would round a second
    // time, so 16-bit targets narrow from float only when the value came
    // from a dtype no wider than float (see convert()).
    case DataType::kFloat16: static_cast<uint16_t*>(out)[i] = float_to_float16(static_cast<float>(value)); break;
    case DataType::kBFloat16: static_cast<uint16_t*>(out)[i] = float_to_bfloat16(static_cast<float>(value)); break;
    case DataType::kFloat32: static_cast<float*>(out)[i] = static_cast<float>(value); break;
    default: static_cast<double*>(out)[i] = value; break;
  }
}

}  // namespace

Status convert(const void* in, DataType from, void* out, DataType to, int64_t count) {
  if (!is_floating_point(from) || !is_floating_point(to)) {
    return Status::InvalidArgument(std::string("convert: from ") + dtype_name(from) + " to " + dtype_name(to) +
                                   "; expected floating-point dtypes (float16, bfloat16, float32, float64)");
  }
  if (from == DataType::kFloat64 && (to == DataType::kFloat16 || to == DataType::kBFloat16)) {
    return Status::InvalidArgument(std::string("convert: from float64 to ") + dtype_name(to) +
                                   " would round twice (through float32); convert to float32 first");
  }
  if (count < 0) return Status::InvalidArgument("convert: negative count " + std::to_string(count));
  if (count > 0 && (in == nullptr || out == nullptr)) {
    return Status::InvalidArgument("convert: null buffer with count " + std::to_string(count));
  }
  if (from == to) {
    if (in != out && count > 0) std::memmove(out, in, static_cast<size_t>(count) * dtype_size(from));
    return Status::OK();
  }
  // Widening in place would overwrite elements not read yet: go backwards.
  const bool backwards = in == out && dtype_size(to) > dtype_size(from);
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = backwards ? count - 1 - k : k;
    store(out, to, i, load(in, from, i));
  }
  return Status::OK();
}

}  // namespace chorus
