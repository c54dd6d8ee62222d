// The element-wise reduce operations shared by the reduction kernels
// (reduce.cc: pairwise, ordered_reduce.cc: several ranks at once).
#pragma once

#include <type_traits>

namespace chorus {
namespace kernels {

// Signed integer overflow is undefined behaviour, but MPI and every framework
// treat integer sums and products as wrapping. Doing the arithmetic in an
// unsigned type at least as wide gives exactly that, with no UB: types
// narrower than unsigned int compute in unsigned int, since their own
// unsigned type would be promoted to (signed) int, where 65535 * 65535
// overflows.
template <typename T, bool = std::is_integral<T>::value>
struct WrapType {
  using type = T;
};
template <typename T>
struct WrapType<T, true> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using Wrap = typename WrapType<T>::type;

struct SumOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Wrap<T>>(a) + static_cast<Wrap<T>>(b));
  }
};
struct ProductOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Wrap<T>>(a) * static_cast<Wrap<T>>(b));
  }
};
// Written as selects (not std::min) so that float loops map onto the
// vector min/max instructions without -ffast-math.
struct MinOp {
  template <typename T>
  T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <typename T>
  T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

}  // namespace kernels
}  // namespace chorus
