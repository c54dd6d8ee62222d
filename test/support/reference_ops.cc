// Reference results of each collective, computed from every rank's input in
// plain loops (see reference.h).
#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "support/reference.h"

namespace chorus_test {
namespace {

int64_t first_dim(const Buffer& b) { return b.shape().empty() ? 1 : b.shape()[0]; }

// Elements per first-dimension row.
int64_t row_elements(const Buffer& b) {
  const int64_t rows = first_dim(b);
  if (rows != 0) return b.elements() / rows;
  int64_t n = 1;
  for (size_t d = 1; d < b.shape().size(); ++d) n *= b.shape()[d];
  return n;
}

Shape with_rows(const Shape& shape, int64_t rows) {
  Shape out = shape;
  if (out.empty()) out.push_back(rows);
  else out[0] = rows;
  return out;
}

// The range of an integer dtype, [lowest, highest], and its width in bits.
struct IntegerRange {
  int64_t lowest;
  int64_t highest;
  int bits;
};

IntegerRange range_of(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return {0, 255, 8};
    case DataType::kInt8: return {-128, 127, 8};
    case DataType::kUInt16: return {0, 65535, 16};
    case DataType::kInt16: return {-32768, 32767, 16};
    case DataType::kInt32: return {INT32_MIN, INT32_MAX, 32};
    default: return {INT64_MIN, INT64_MAX, 64};
  }
}

// `value` reduced modulo 2^bits into the dtype's range (two's complement).
int64_t wrap(uint64_t value, const IntegerRange& range) {
  if (range.bits == 64) {
    int64_t out;
    std::memcpy(&out, &value, sizeof(out));
    return out;
  }
  const uint64_t modulus = uint64_t{1} << range.bits;
  const uint64_t low = value & (modulus - 1);
  const bool negative = range.lowest < 0 && low >= modulus / 2;
  return negative ? static_cast<int64_t>(low) - static_cast<int64_t>(modulus) : static_cast<int64_t>(low);
}

// Horovod's integer scaling: double(value) * factor, truncated; beyond the
// range, the bound (where Horovod's C++ conversion is undefined).
int64_t scale_like_horovod(int64_t value, double factor, const IntegerRange& range) {
  const double scaled = std::trunc(static_cast<double>(value) * factor);
  if (scaled >= std::ldexp(1.0, range.lowest < 0 ? range.bits - 1 : range.bits)) return range.highest;
  if (scaled <= static_cast<double>(range.lowest)) return range.lowest;
  return static_cast<int64_t>(scaled);
}

std::vector<double> reference_reduce_integers(const std::vector<Buffer>& inputs, ReduceOp op, double prescale,
                                              double postscale, int divisor) {
  const IntegerRange range = range_of(inputs[0].dtype());
  const auto n = static_cast<size_t>(inputs[0].elements());
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t acc = 0;
    for (size_t r = 0; r < inputs.size(); ++r) {
      int64_t v = static_cast<int64_t>(inputs[r].get(static_cast<int64_t>(i)));
      if (prescale != 1.0) v = scale_like_horovod(v, prescale, range);
      if (r == 0) {
        acc = v;
        continue;
      }
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAverage:
          acc = wrap(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v), range);
          break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
        case ReduceOp::kMax: acc = std::max(acc, v); break;
        case ReduceOp::kProduct:
          acc = wrap(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v), range);
          break;
        case ReduceOp::kAdasum: ADD_FAILURE() << "reference_reduce: Adasum is not element-wise"; break;
      }
    }
    if (op == ReduceOp::kAverage) {
      acc = postscale != 1.0 ? scale_like_horovod(acc, postscale / divisor, range) : acc / divisor;
    } else if (postscale != 1.0) {
      acc = scale_like_horovod(acc, postscale, range);
    }
    out[i] = static_cast<double>(acc);
  }
  return out;
}

}  // namespace

std::vector<double> reference_reduce(const std::vector<Buffer>& inputs, ReduceOp op,
                                     double prescale, double postscale, int divisor) {
  if (inputs.empty()) throw std::invalid_argument("reference_reduce: no inputs");
  const DataType dtype = inputs[0].dtype();
  if (divisor == 0) divisor = static_cast<int>(inputs.size());
  if (!chorus::is_floating_point(dtype)) return reference_reduce_integers(inputs, op, prescale, postscale, divisor);
  const auto n = static_cast<size_t>(inputs[0].elements());
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    double acc = 0.0;
    for (size_t r = 0; r < inputs.size(); ++r) {
      const double v = prescale * inputs[r].get(static_cast<int64_t>(i));
      if (r == 0) {
        acc = v;
        continue;
      }
      switch (op) {
        case ReduceOp::kSum:
        case ReduceOp::kAverage: acc += v; break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
        case ReduceOp::kMax: acc = std::max(acc, v); break;
        case ReduceOp::kProduct: acc *= v; break;
        case ReduceOp::kAdasum: ADD_FAILURE() << "reference_reduce: Adasum is not element-wise (adasum_reference.h)"; break;
      }
    }
    if (op == ReduceOp::kAverage) acc /= divisor;
    out[i] = acc * postscale;
  }
  return out;
}

Buffer reference_allgather(const std::vector<Buffer>& inputs) {
  int64_t rows = 0;
  for (const Buffer& b : inputs) rows += first_dim(b);
  Buffer out(inputs.at(0).dtype(), with_rows(inputs[0].shape(), rows));
  size_t offset = 0;
  for (const Buffer& b : inputs) {
    std::memcpy(static_cast<char*>(out.data()) + offset, b.data(), b.bytes());
    offset += b.bytes();
  }
  return out;
}

std::pair<int64_t, int64_t> reducescatter_rows(int64_t rows, int size, int rank) {
  const int64_t base = rows / size;
  const int64_t extra = rows % size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::vector<double> reference_reducescatter(const std::vector<Buffer>& inputs, ReduceOp op,
                                            int rank, double prescale, double postscale) {
  const std::vector<double> full = reference_reduce(inputs, op, prescale, postscale);
  const auto range = reducescatter_rows(first_dim(inputs[0]), static_cast<int>(inputs.size()), rank);
  const int64_t per_row = row_elements(inputs[0]);
  return std::vector<double>(full.begin() + range.first * per_row,
                             full.begin() + range.second * per_row);
}

std::vector<int64_t> alltoall_splits(int rank, int size, uint64_t seed) {
  std::vector<int64_t> splits(static_cast<size_t>(size));
  for (int j = 0; j < size; ++j) {
    splits[static_cast<size_t>(j)] =
        pick(0, 3, seed, static_cast<uint64_t>(rank), static_cast<uint64_t>(j), 77);
  }
  return splits;
}

AlltoallResult reference_alltoall(const std::vector<Buffer>& inputs,
                                  const std::vector<std::vector<int64_t>>& splits, int rank) {
  const int size = static_cast<int>(inputs.size());
  const Buffer& mine = inputs.at(static_cast<size_t>(rank));
  const int64_t per_row = row_elements(mine);
  const size_t row_bytes = static_cast<size_t>(per_row) * chorus::dtype_size(mine.dtype());
  AlltoallResult result;
  std::vector<std::pair<const Buffer*, int64_t>> pieces;  // (source, first row)
  for (int j = 0; j < size; ++j) {
    const Buffer& source = inputs[static_cast<size_t>(j)];
    std::vector<int64_t> s = splits.at(static_cast<size_t>(j));
    if (s.empty()) s.assign(static_cast<size_t>(size), first_dim(source) / size);
    int64_t offset = 0;
    for (int k = 0; k < rank; ++k) offset += s[static_cast<size_t>(k)];
    result.received_splits.push_back(s[static_cast<size_t>(rank)]);
    pieces.emplace_back(&source, offset);
  }
  int64_t rows = 0;
  for (int64_t n : result.received_splits) rows += n;
  result.output = Buffer(mine.dtype(), with_rows(mine.shape(), rows));
  char* dst = static_cast<char*>(result.output.data());
  for (size_t j = 0; j < pieces.size(); ++j) {
    const size_t n = static_cast<size_t>(result.received_splits[j]) * row_bytes;
    std::memcpy(dst, static_cast<const char*>(pieces[j].first->data()) +
                         static_cast<size_t>(pieces[j].second) * row_bytes, n);
    dst += n;
  }
  return result;
}

}  // namespace chorus_test
