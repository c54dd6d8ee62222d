// Bit-exact references for allreduces whose result depends on the order in
// which ranks are combined, written from the documented orders alone (scalar
// code, no Chorus kernels, no MPI):
//   - hierarchical: every element folded over the ranks of each host in
//     local-rank order (float16/bfloat16 accumulate in float32 and round
//     once per host), then over the hosts in host order (the hosts' 16-bit
//     results accumulate in float32 and round once more);
//   - flat: over the world ranks in rank order (the MPI path; 16-bit floats
//     accumulate in float32 and round once).
// Inputs are a pure function of (rank, seed, index), so every rank builds
// every other rank's input itself. Header-only: shared by the single-host
// parallel test and the multi-host (network namespace) tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "chorus/types.h"
#include "ops/kernels/half.h"

namespace chorus_test {

using Bytes = std::vector<unsigned char>;

// Where every world rank runs: host_of[r] and local_of[r].
struct HostLayout {
  std::vector<int> host_of;
  std::vector<int> local_of;
  int hosts = 1;
  int local_size = 1;

  // Ranks 0..L-1 on host 0, L..2L-1 on host 1, ... (mpirun's --map-by slot).
  static HostLayout block(int hosts, int local_size) {
    HostLayout l{{}, {}, hosts, local_size};
    for (int r = 0; r < hosts * local_size; ++r) {
      l.host_of.push_back(r / local_size);
      l.local_of.push_back(r % local_size);
    }
    return l;
  }
  // Rank r on host r % hosts (mpirun's --map-by node).
  static HostLayout cyclic(int hosts, int local_size) {
    HostLayout l{{}, {}, hosts, local_size};
    for (int r = 0; r < hosts * local_size; ++r) {
      l.host_of.push_back(r % hosts);
      l.local_of.push_back(r / hosts);
    }
    return l;
  }
  int ranks() const { return static_cast<int>(host_of.size()); }
  // The world rank at (host, local rank).
  int rank_at(int host, int local) const {
    for (int r = 0; r < ranks(); ++r) {
      if (host_of[static_cast<size_t>(r)] == host && local_of[static_cast<size_t>(r)] == local) return r;
    }
    return -1;
  }
  std::string describe() const {
    return std::to_string(hosts) + " hosts x " + std::to_string(local_size) + " ranks";
  }
};

namespace hierarchical_detail {

inline uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
T apply(T a, T b, chorus::ReduceOp op) {
  if constexpr (std::is_integral_v<T>) {
    // Sums and products wrap: in an unsigned type, unsigned int for narrow
    // ones (their own would be promoted to int, where they could overflow).
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    if (op == chorus::ReduceOp::kSum) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if (op == chorus::ReduceOp::kProduct) {
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    }
  } else {
    if (op == chorus::ReduceOp::kSum) return a + b;
    if (op == chorus::ReduceOp::kProduct) return a * b;
  }
  if (op == chorus::ReduceOp::kMin) return b < a ? b : a;
  return a < b ? b : a;
}

inline float widen(chorus::DataType dtype, uint16_t bits) {
  return dtype == chorus::DataType::kFloat16 ? chorus::float16_to_float(bits) : chorus::bfloat16_to_float(bits);
}
inline uint16_t narrow(chorus::DataType dtype, float value) {
  return dtype == chorus::DataType::kFloat16 ? chorus::float_to_float16(value) : chorus::float_to_bfloat16(value);
}

// `order` lists the groups in fold order, each with its ranks in fold
// order. For every element, each group is folded (16-bit floats in
// float32, rounded once), then the groups' results (16-bit floats: the
// rounded results accumulated in float32, rounded once).
template <typename T>
void fold_elements(chorus::ReduceOp op, const std::vector<Bytes>& inputs, const std::vector<std::vector<int>>& order,
                   size_t count, unsigned char* out) {
  for (size_t i = 0; i < count; ++i) {
    const size_t at = i * sizeof(T);
    T total{};
    for (size_t g = 0; g < order.size(); ++g) {
      const std::vector<int>& ranks = order[g];
      T acc = load<T>(inputs[static_cast<size_t>(ranks[0])].data() + at);
      for (size_t m = 1; m < ranks.size(); ++m) {
        acc = apply(acc, load<T>(inputs[static_cast<size_t>(ranks[m])].data() + at), op);
      }
      total = g == 0 ? acc : apply(total, acc, op);
    }
    store(out + at, total);
  }
}

inline void fold_half_elements(chorus::DataType dtype, chorus::ReduceOp op, const std::vector<Bytes>& inputs,
                               const std::vector<std::vector<int>>& order, size_t count, unsigned char* out) {
  auto value = [&](int rank, size_t at) {
    return widen(dtype, load<uint16_t>(inputs[static_cast<size_t>(rank)].data() + at));
  };
  for (size_t i = 0; i < count; ++i) {
    const size_t at = i * 2;
    float total = 0;
    for (size_t g = 0; g < order.size(); ++g) {
      const std::vector<int>& ranks = order[g];
      float acc = value(ranks[0], at);
      for (size_t m = 1; m < ranks.size(); ++m) acc = apply(acc, value(ranks[m], at), op);
      const float rounded = widen(dtype, narrow(dtype, acc));
      total = g == 0 ? rounded : apply(total, rounded, op);
    }
    store(out + at, narrow(dtype, total));
  }
}

inline Bytes fold(chorus::DataType dtype, chorus::ReduceOp op, const std::vector<Bytes>& inputs,
                  const std::vector<std::vector<int>>& order) {
  const size_t size = chorus::dtype_size(dtype);
  const size_t count = inputs.empty() ? 0 : inputs[0].size() / size;
  Bytes out(count * size);
  unsigned char* o = out.data();
  switch (dtype) {
    case chorus::DataType::kUInt8: fold_elements<uint8_t>(op, inputs, order, count, o); break;
    case chorus::DataType::kInt8: fold_elements<int8_t>(op, inputs, order, count, o); break;
    case chorus::DataType::kInt16: fold_elements<int16_t>(op, inputs, order, count, o); break;
    case chorus::DataType::kUInt16: fold_elements<uint16_t>(op, inputs, order, count, o); break;
    case chorus::DataType::kInt32: fold_elements<int32_t>(op, inputs, order, count, o); break;
    case chorus::DataType::kInt64: fold_elements<int64_t>(op, inputs, order, count, o); break;
    case chorus::DataType::kFloat32: fold_elements<float>(op, inputs, order, count, o); break;
    case chorus::DataType::kFloat64: fold_elements<double>(op, inputs, order, count, o); break;
    case chorus::DataType::kFloat16:
    case chorus::DataType::kBFloat16: fold_half_elements(dtype, op, inputs, order, count, o); break;
    case chorus::DataType::kBool: break;
  }
  return out;
}

}  // namespace hierarchical_detail

// Element `index` of `rank`'s input: floats at full precision (so that sums
// show the order of the additions), products near 1 in magnitude (so that
// they neither vanish nor overflow), integers over their whole range (sums
// and products wrap).
inline Bytes order_sensitive_input(chorus::DataType dtype, chorus::ReduceOp op, int rank, uint64_t seed,
                                   int64_t count) {
  using namespace hierarchical_detail;
  const size_t size = chorus::dtype_size(dtype);
  Bytes out(static_cast<size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i) {
    unsigned char* dst = out.data() + static_cast<size_t>(i) * size;
    const uint64_t bits = mix(mix(seed * 131 + static_cast<uint64_t>(rank)) ^ static_cast<uint64_t>(i));
    const double unit = static_cast<double>(bits >> 11) * 0x1p-53;
    const double sign = (bits & 1) ? -1.0 : 1.0;
    const double real = op == chorus::ReduceOp::kProduct ? sign * (0.5 + 1.5 * unit) : 2.0 * unit - 1.0;
    switch (dtype) {
      case chorus::DataType::kUInt8: store(dst, static_cast<uint8_t>(bits >> 7)); break;
      case chorus::DataType::kInt8: store(dst, static_cast<int8_t>(bits >> 7)); break;
      case chorus::DataType::kInt16: store(dst, static_cast<int16_t>(bits >> 7)); break;
      case chorus::DataType::kUInt16: store(dst, static_cast<uint16_t>(bits >> 7)); break;
      case chorus::DataType::kInt32: store(dst, static_cast<int32_t>(bits >> 7)); break;
      case chorus::DataType::kInt64: store(dst, static_cast<int64_t>(bits >> 3)); break;
      case chorus::DataType::kFloat16: store(dst, chorus::float_to_float16(static_cast<float>(real))); break;
      case chorus::DataType::kBFloat16: store(dst, chorus::float_to_bfloat16(static_cast<float>(real))); break;
      case chorus::DataType::kFloat32: store(dst, static_cast<float>(real)); break;
      case chorus::DataType::kFloat64: store(dst, real); break;
      case chorus::DataType::kBool: break;
    }
  }
  return out;
}

inline std::vector<Bytes> order_sensitive_inputs(chorus::DataType dtype, chorus::ReduceOp op, int ranks,
                                                 uint64_t seed, int64_t count) {
  std::vector<Bytes> inputs;
  for (int r = 0; r < ranks; ++r) inputs.push_back(order_sensitive_input(dtype, op, r, seed, count));
  return inputs;
}

// Hosts first, in local-rank order, then across hosts in host order.
inline Bytes hierarchical_reference(chorus::DataType dtype, chorus::ReduceOp op, const std::vector<Bytes>& inputs,
                                    const HostLayout& layout) {
  std::vector<std::vector<int>> order(static_cast<size_t>(layout.hosts));
  for (int h = 0; h < layout.hosts; ++h) {
    for (int l = 0; l < layout.local_size; ++l) order[static_cast<size_t>(h)].push_back(layout.rank_at(h, l));
  }
  return hierarchical_detail::fold(dtype, op, inputs, order);
}

// Over the world ranks in rank order, as one group.
inline Bytes flat_reference(chorus::DataType dtype, chorus::ReduceOp op, const std::vector<Bytes>& inputs) {
  std::vector<std::vector<int>> order(1);
  for (int r = 0; r < static_cast<int>(inputs.size()); ++r) order[0].push_back(r);
  return hierarchical_detail::fold(dtype, op, inputs, order);
}

// Indices of the elements whose bytes differ (at most `limit` of them).
inline std::vector<int64_t> differing_elements(const Bytes& a, const Bytes& b, size_t element_size,
                                               size_t limit = 5) {
  std::vector<int64_t> out;
  for (size_t i = 0; i + element_size <= a.size() && i + element_size <= b.size(); i += element_size) {
    if (std::memcmp(a.data() + i, b.data() + i, element_size) != 0) {
      out.push_back(static_cast<int64_t>(i / element_size));
      if (out.size() >= limit) break;
    }
  }
  return out;
}

}  // namespace chorus_test
