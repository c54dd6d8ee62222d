// Input generation, element access and comparison. The float16/bfloat16
// conversions are written here on purpose instead of reusing ops/kernels:
// a reference that shares the runtime's conversion would share its bugs.
#include "support/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace chorus_test {
namespace {

// float -> IEEE binary16, round to nearest even (overflow to infinity).
uint16_t to_float16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exponent = (x >> 23) & 0xffu;
  uint32_t mantissa = x & 0x7fffffu;
  if (exponent == 0xffu) return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal half: value = M * 2^-24 with M the 24-bit significand
    // shifted right by 14 - e.
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const int shift = 14 - e;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(half);
}

double from_float16(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = std::ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else {
    v = std::ldexp(mantissa + 1024, exponent - 25);
  }
  return (h & 0x8000u) ? -v : v;
}

uint16_t to_bfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof(x));
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

double from_bfloat16(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

template <typename T>
T load(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void store(void* data, int64_t i, T v) {
  std::memcpy(static_cast<char*>(data) + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

double read_value(DataType dtype, const void* data, int64_t i) {
  switch (dtype) {
    case DataType::kUInt8: return load<uint8_t>(data, i);
    case DataType::kInt8: return load<int8_t>(data, i);
    case DataType::kInt16: return load<int16_t>(data, i);
    case DataType::kUInt16: return load<uint16_t>(data, i);
    case DataType::kInt32: return load<int32_t>(data, i);
    case DataType::kInt64: return static_cast<double>(load<int64_t>(data, i));
    case DataType::kFloat16: return from_float16(load<uint16_t>(data, i));
    case DataType::kBFloat16: return from_bfloat16(load<uint16_t>(data, i));
    case DataType::kFloat32: return load<float>(data, i);
    case DataType::kFloat64: return load<double>(data, i);
    case DataType::kBool: return load<uint8_t>(data, i);
  }
  return 0.0;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return splitmix64(splitmix64(splitmix64(splitmix64(a) ^ b) ^ c) ^ d);
}

// One element's value, from its hash; see Values for the ranges and why.
double generate_value(DataType dtype, Values values, uint64_t h) {
  if (dtype == DataType::kBool) return static_cast<double>(h & 1u);
  const bool floating = chorus::is_floating_point(dtype);
  if (values == Values::kProduct) {
    if (dtype == DataType::kUInt8 || dtype == DataType::kUInt16) return static_cast<double>(1 + h % 3);
    static const double kInts[] = {-2, -1, 1, 2};
    static const double kFloats[] = {-2, -1.5, -1, -0.5, 0.5, 1, 1.5, 2};
    return floating ? kFloats[h % 8] : kInts[h % 4];
  }
  if (floating) {
    if (values == Values::kRandom) return static_cast<double>(h >> 11) * 0x1.0p-52 - 1.0;
    return static_cast<double>(static_cast<int64_t>(h % 65) - 32) / 8.0;
  }
  switch (dtype) {
    case DataType::kUInt8: return static_cast<double>(h % 41);
    case DataType::kInt8: return static_cast<double>(static_cast<int64_t>(h % 41) - 20);
    case DataType::kUInt16: return static_cast<double>(h % 2001);
    default: return static_cast<double>(static_cast<int64_t>(h % 2001) - 1000);
  }
}

struct Tolerance {
  double rtol;
  double atol;
};

Tolerance tolerance_for(DataType dtype) {
  switch (dtype) {
    // Up to three roundings (prescale, average, postscale) of 2^-11 each.
    case DataType::kFloat16: return {4e-3, 1e-4};
    // bfloat16 keeps 8 significant bits: three roundings of 2^-9.
    case DataType::kBFloat16: return {2e-2, 1e-3};
    case DataType::kFloat32: return {1e-5, 1e-6};
    case DataType::kFloat64: return {1e-12, 1e-12};
    default: return {0.0, 0.0};
  }
}

}  // namespace

const std::vector<DataType>& numeric_dtypes() {
  static const std::vector<DataType> kTypes = {
      DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kUInt16, DataType::kInt32,
      DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64};
  return kTypes;
}

const std::vector<DataType>& all_dtypes() {
  static const std::vector<DataType> kTypes = [] {
    std::vector<DataType> types = numeric_dtypes();
    types.push_back(DataType::kBool);
    return types;
  }();
  return kTypes;
}

const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> kOps = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin,
                                             ReduceOp::kMax, ReduceOp::kProduct};
  return kOps;
}

Buffer::Buffer(DataType dtype, Shape shape)
    : dtype_(dtype),
      shape_(std::move(shape)),
      bytes_(static_cast<size_t>(chorus::num_elements(shape_)) * chorus::dtype_size(dtype)),
      storage_(bytes_ / sizeof(uint64_t) + 1, 0) {}

double Buffer::get(int64_t i) const { return read_value(dtype_, data(), i); }

void Buffer::set(int64_t i, double value) {
  switch (dtype_) {
    case DataType::kUInt8: store(data(), i, static_cast<uint8_t>(value)); break;
    case DataType::kInt8: store(data(), i, static_cast<int8_t>(value)); break;
    case DataType::kInt16: store(data(), i, static_cast<int16_t>(value)); break;
    case DataType::kUInt16: store(data(), i, static_cast<uint16_t>(value)); break;
    case DataType::kInt32: store(data(), i, static_cast<int32_t>(value)); break;
    case DataType::kInt64: store(data(), i, static_cast<int64_t>(value)); break;
    case DataType::kFloat16: store(data(), i, to_float16(static_cast<float>(value))); break;
    case DataType::kBFloat16: store(data(), i, to_bfloat16(static_cast<float>(value))); break;
    case DataType::kFloat32: store(data(), i, static_cast<float>(value)); break;
    case DataType::kFloat64: store(data(), i, value); break;
    case DataType::kBool: store(data(), i, static_cast<uint8_t>(value != 0.0)); break;
  }
}

double round_once(DataType dtype, double value) {
  int digits = 0;        // significant bits, the leading one included
  int min_exponent = 0;  // of the smallest normal value
  switch (dtype) {
    case DataType::kFloat16: digits = 11; min_exponent = -14; break;
    case DataType::kBFloat16: digits = 8; min_exponent = -126; break;
    case DataType::kFloat32: return static_cast<float>(value);
    default: return value;
  }
  if (value == 0.0 || !std::isfinite(value)) return value;
  int exponent = 0;
  std::frexp(value, &exponent);  // |value| in [2^(exponent-1), 2^exponent)
  const double ulp = std::ldexp(1.0, std::max(exponent - 1, min_exponent) - (digits - 1));
  // Dividing by a power of two is exact; nearbyint rounds half to even in
  // the default rounding mode.
  return std::nearbyint(value / ulp) * ulp;
}

Buffer make_input(DataType dtype, const Shape& shape, int rank, int index, uint64_t seed,
                  Values values) {
  Buffer buffer(dtype, shape);
  const uint64_t base = hash4(seed, static_cast<uint64_t>(rank), static_cast<uint64_t>(index),
                              static_cast<uint64_t>(dtype) + 1000 * static_cast<uint64_t>(values));
  for (int64_t i = 0; i < buffer.elements(); ++i) {
    buffer.set(i, generate_value(dtype, values, splitmix64(base ^ static_cast<uint64_t>(i) * 0x100000001b3ull)));
  }
  return buffer;
}

std::vector<Buffer> make_inputs(DataType dtype, const Shape& shape, int size, int index,
                                uint64_t seed, Values values) {
  std::vector<Buffer> inputs;
  for (int r = 0; r < size; ++r) inputs.push_back(make_input(dtype, shape, r, index, seed, values));
  return inputs;
}

int64_t pick(int64_t lo, int64_t hi, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const uint64_t span = static_cast<uint64_t>(hi - lo + 1);
  return lo + static_cast<int64_t>(hash4(a, b, c, d) % span);
}

std::vector<double> values_of(const Buffer& buffer) {
  std::vector<double> out(static_cast<size_t>(buffer.elements()));
  for (int64_t i = 0; i < buffer.elements(); ++i) out[static_cast<size_t>(i)] = buffer.get(i);
  return out;
}

::testing::AssertionResult matches(const chorus::Tensor& actual,
                                   const std::vector<double>& expected) {
  if (actual.elements() != static_cast<int64_t>(expected.size())) {
    return ::testing::AssertionFailure() << "tensor has " << actual.elements()
                                         << " elements, expected " << expected.size();
  }
  if (!expected.empty() && actual.data == nullptr) {
    return ::testing::AssertionFailure() << "tensor data is null";
  }
  const Tolerance tol = tolerance_for(actual.dtype);
  std::ostringstream out;
  int64_t bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double a = read_value(actual.dtype, actual.data, static_cast<int64_t>(i));
    const double e = expected[i];
    const bool ok = (a == e) || std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
    if (!ok && bad++ < 5) out << "\n  [" << i << "] actual " << a << ", expected " << e;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << expected.size() << " "
                                       << chorus::dtype_name(actual.dtype)
                                       << " elements differ:" << out.str();
}

::testing::AssertionResult same_bytes(const chorus::Tensor& actual, const Buffer& expected) {
  if (actual.dtype != expected.dtype() || actual.shape != expected.shape()) {
    return ::testing::AssertionFailure()
           << "got " << chorus::dtype_name(actual.dtype) << " " << chorus::shape_to_string(actual.shape)
           << ", expected " << chorus::dtype_name(expected.dtype()) << " "
           << chorus::shape_to_string(expected.shape());
  }
  if (expected.bytes() == 0) return ::testing::AssertionSuccess();
  if (actual.data == nullptr) return ::testing::AssertionFailure() << "tensor data is null";
  if (std::memcmp(actual.data, expected.data(), expected.bytes()) == 0) {
    return ::testing::AssertionSuccess();
  }
  const size_t width = chorus::dtype_size(expected.dtype());
  for (size_t i = 0; i * width < expected.bytes(); ++i) {
    if (std::memcmp(static_cast<const char*>(actual.data) + i * width,
                    static_cast<const char*>(expected.data()) + i * width, width) != 0) {
      return ::testing::AssertionFailure()
             << "first difference at element " << i << ": actual "
             << read_value(actual.dtype, actual.data, static_cast<int64_t>(i)) << ", expected "
             << expected.get(static_cast<int64_t>(i));
    }
  }
  return ::testing::AssertionFailure() << "bytes differ";
}

}  // namespace chorus_test
