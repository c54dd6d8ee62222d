// Shared helpers of the parallel tests of the torch front end: deterministic
// inputs that every rank can regenerate for every other rank (so each rank
// computes the expected result locally with plain LibTorch, without Chorus),
// non-contiguous layouts of the same values, comparisons, and waits that
// never block forever.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <torch/torch.h>

#include "chorus/torch/ops.h"
#include "support/harness.h"

namespace chorus_torch_test {

// Chorus initialised once per suite, and one intra-op thread per rank (the
// ranks share few cores, and results must not depend on thread count).
class TorchSuite : public chorus_test::ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    chorus_test::ChorusSuite::SetUpTestSuite();
  }
};

// The dtypes that reductions support, and those plus bool for the ops that
// only move data.
inline std::vector<c10::ScalarType> numeric_dtypes() {
  return {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16, torch::kInt32,
          torch::kInt64,   torch::kUInt8,   torch::kInt8,    torch::kInt16};
}
inline std::vector<c10::ScalarType> all_dtypes() {
  auto dtypes = numeric_dtypes();
  dtypes.push_back(torch::kBool);
  return dtypes;
}

inline std::string dtype_label(c10::ScalarType dtype) { return c10::toString(dtype); }

// Names parameterized tests after their dtype ("Float").
struct DtypeParamName {
  std::string operator()(const ::testing::TestParamInfo<c10::ScalarType>& param) const {
    return dtype_label(param.param);
  }
};

// Input `index` of `rank`: integers in [-8, 8] (uint8: [0, 16]; bool: a
// pattern of true/false), and for floating dtypes those divided by 4. Every
// value and every sum over up to 4 ranks is exact in every dtype, so sums
// compare exactly and only averages round.
inline torch::Tensor make_input(c10::ScalarType dtype, at::IntArrayRef shape, int rank, int index) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  torch::Tensor v = (torch::arange(count, torch::kInt64) * 7 + rank * 13 + index * 5) % 17 - 8;
  if (dtype == torch::kUInt8) v = v + 8;
  if (dtype == torch::kBool) return (v % 3 == 0).reshape(shape);
  torch::Tensor values = v.to(torch::kFloat64);
  if (at::isFloatingType(dtype)) values = values / 4;
  return values.to(dtype).reshape(shape);
}

// The inputs of ranks 0..size-1, as float64 (bool as 0/1).
inline std::vector<torch::Tensor> inputs_as_double(c10::ScalarType dtype, at::IntArrayRef shape,
                                                   int size, int index) {
  std::vector<torch::Tensor> all;
  for (int r = 0; r < size; ++r) all.push_back(make_input(dtype, shape, r, index).to(torch::kFloat64));
  return all;
}

enum class Layout { kContiguous, kTransposed, kSliced };
inline const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kTransposed: return "transposed";
    case Layout::kSliced: return "sliced";
  }
  return "?";
}
inline std::vector<Layout> all_layouts() {
  return {Layout::kContiguous, Layout::kTransposed, Layout::kSliced};
}

// Value a sliced tensor's skipped elements hold, to check that in-place
// results touch only the view's elements.
constexpr double kSentinel = 3;

// A tensor holding `values` in the given layout. Transposed and sliced ones
// are views into a larger tensor (returned in *base when given) and are not
// contiguous (for shapes with at least two dimensions larger than 1).
inline torch::Tensor with_layout(const torch::Tensor& values, Layout layout,
                                 torch::Tensor* base = nullptr) {
  torch::Tensor owner, view;
  switch (layout) {
    case Layout::kContiguous:
      owner = values.clone();
      view = owner;
      break;
    case Layout::kTransposed:
      owner = values.transpose(0, 1).contiguous();
      view = owner.transpose(0, 1);
      break;
    case Layout::kSliced: {
      std::vector<int64_t> wide(values.sizes().begin(), values.sizes().end());
      wide.back() *= 2;
      owner = torch::full(wide, kSentinel, values.options());
      view = owner.slice(-1, 0, wide.back(), 2);
      view.copy_(values);
      break;
    }
  }
  if (base) *base = owner;
  return view;
}

// The sliced view's skipped elements (the odd positions of the last dim).
inline torch::Tensor skipped_of(const torch::Tensor& base) {
  return base.slice(-1, 1, base.size(-1), 2);
}

// |actual - expected| within a tolerance that fits the dtype: exact for
// integers and bool; float16/bfloat16 round an average once.
inline ::testing::AssertionResult close_to(const torch::Tensor& actual,
                                          const torch::Tensor& expected) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "result is undefined";
  if (actual.sizes() != expected.sizes()) {
    return ::testing::AssertionFailure() << "shape " << actual.sizes() << ", expected "
                                         << expected.sizes();
  }
  const torch::Tensor a = actual.to(torch::kFloat64);
  const torch::Tensor e = expected.to(torch::kFloat64);
  double rtol = 0;
  switch (actual.scalar_type()) {
    case torch::kFloat16: rtol = 1e-3; break;
    case torch::kBFloat16: rtol = 8e-3; break;
    case torch::kFloat32: rtol = 1e-6; break;
    case torch::kFloat64: rtol = 1e-12; break;
    default: break;
  }
  if (a.numel() == 0 || torch::allclose(a, e, rtol, /*atol=*/rtol)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "got\n" << a << "\nexpected\n" << e;
}

// Waits at most the harness timeout; a failure or timeout becomes a test
// failure and an undefined tensor.
inline torch::Tensor result_of(const chorus::torch::TorchHandle& handle) {
  try {
    if (!handle.wait_for(chorus_test::kWaitTimeout)) {
      ADD_FAILURE() << "'" << handle.name() << "' still in flight after the harness timeout";
      return torch::Tensor();
    }
    return handle.wait();
  } catch (const chorus::Error& e) {
    ADD_FAILURE() << "'" << handle.name() << "' failed: " << e.what();
  }
  return torch::Tensor();
}

// The message of the chorus::Error that a bounded wait for `handle` throws
// ("" when it succeeded or timed out).
inline std::string error_of(const chorus::torch::TorchHandle& handle) {
  try {
    if (!handle.wait_for(chorus_test::kWaitTimeout)) return "";
    handle.wait();
  } catch (const chorus::Error& e) {
    return e.what();
  }
  return "";
}

// Rows [begin, end) of dimension 0 that reducescatter gives `rank`: the
// first rows % size ranks get one row more.
inline std::pair<int64_t, int64_t> scatter_rows(int64_t rows, int size, int rank) {
  const int64_t base = rows / size, extra = rows % size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

// The optimizer's state of one parameter. LibTorch keys it by the
// parameter's TensorImpl address: as text (c10::guts::to_string) up to 1.13,
// as the pointer itself in 2.x, which also removed c10::guts::to_string.
template <typename StateMap>
typename StateMap::const_iterator find_param_state(const StateMap& state, const torch::Tensor& param) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;
    address << param.unsafeGetTensorImpl();
    return state.find(address.str());
  } else {
    return state.find(static_cast<Key>(param.unsafeGetTensorImpl()));
  }
}

}  // namespace chorus_torch_test
