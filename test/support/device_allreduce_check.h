// One allreduce on a device's memory through a backend, checked against the
// hierarchical reference (test/support/hierarchical_reference.h): shared by
// the hierarchical device backend's tests on the asynchronous test device
// and on GPUs. Header-only: the parallel support library needs no device.
//
// The input goes to device memory first (upload waits for the stream), so
// a test can prepare many cases, queue them all back to back, and only then
// wait for and check each.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "contracts/backend.h"
#include "contracts/device.h"
#include "support/hierarchical_reference.h"

namespace chorus_test {

// How a result must match the reference.
enum class Match {
  // Bit for bit when the factor is 1; with a factor, within a rounding of
  // the scaled reference (the factor goes with the cross-host step, rounded
  // there once, where the reference rounds and then scales).
  kHierarchicalOrder,
  // Floating-point sums and products in any order (NCCL's): within a
  // rounding per rank, of the sum of the magnitudes (sums) or of the result
  // (products). Integers, and min and max without a factor, bit for bit.
  kAnyOrder,
};

struct AllreduceCase {
  chorus::DataType dtype;
  chorus::ReduceOp op;
  int64_t count;
  bool in_place;
  double factor;
  uint64_t seed;
  std::string describe(const HostLayout& layout) const {
    return layout.describe() + ": " + chorus::dtype_name(dtype) + " " + chorus::reduce_op_name(op) + " of " +
           std::to_string(count) + (in_place ? " in place" : "") + " x " + std::to_string(factor);
  }
};

struct PreparedAllreduce {
  AllreduceCase c;
  std::shared_ptr<void> input;
  std::shared_ptr<void> output;
  Bytes expected;
  std::vector<double> magnitude;  // per element, the sum of |input| over the ranks
  chorus::WorkPtr work;
};

namespace device_check_detail {

inline int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

inline std::shared_ptr<void> upload(chorus::DeviceOps& device, const Bytes& bytes) {
  std::shared_ptr<void> memory;
  const chorus::Status allocated = device.allocate(bytes.size(), &memory);
  EXPECT_TRUE(allocated.ok()) << allocated.to_string();
  const chorus::Status copied = device.from_host(memory.get(), bytes.data(), bytes.size());
  EXPECT_TRUE(copied.ok()) << copied.to_string();
  return memory;
}

inline Bytes download(chorus::DeviceOps& device, const void* memory, size_t bytes) {
  Bytes out(bytes);
  const chorus::Status copied = device.to_host(out.data(), memory, bytes);
  EXPECT_TRUE(copied.ok()) << copied.to_string();
  return out;
}

// The dtype's relative rounding (its epsilon) and its smallest subnormal.
inline double epsilon(chorus::DataType dtype) {
  switch (dtype) {
    case chorus::DataType::kFloat16: return std::ldexp(1.0, -10);
    case chorus::DataType::kBFloat16: return std::ldexp(1.0, -7);
    case chorus::DataType::kFloat32: return std::ldexp(1.0, -23);
    default: return std::ldexp(1.0, -52);
  }
}
inline double tiniest(chorus::DataType dtype) {
  switch (dtype) {
    case chorus::DataType::kFloat16: return std::ldexp(1.0, -24);
    case chorus::DataType::kBFloat16: return std::ldexp(1.0, -133);
    case chorus::DataType::kFloat32: return std::ldexp(1.0, -149);
    default: return std::ldexp(1.0, -1074);
  }
}

inline double value_at(chorus::DataType dtype, const Bytes& bytes, int64_t i) {
  using hierarchical_detail::load;
  const unsigned char* p = bytes.data() + static_cast<size_t>(i) * chorus::dtype_size(dtype);
  switch (dtype) {
    case chorus::DataType::kFloat16: return chorus::float16_to_float(load<uint16_t>(p));
    case chorus::DataType::kBFloat16: return chorus::bfloat16_to_float(load<uint16_t>(p));
    case chorus::DataType::kFloat32: return load<float>(p);
    default: return load<double>(p);
  }
}

}  // namespace device_check_detail

// `c`'s input in device memory (and its output, unless in place), and what
// the output must hold: the hierarchical reference over `layout`, or the
// flat one (world-rank order) when `flat`.
inline PreparedAllreduce prepare_allreduce(chorus::DeviceOps& device, const HostLayout& layout, bool flat,
                                           const AllreduceCase& c) {
  using namespace device_check_detail;
  const std::vector<Bytes> inputs = order_sensitive_inputs(c.dtype, c.op, size(), c.seed, c.count);
  PreparedAllreduce q;
  q.c = c;
  q.input = upload(device, inputs[static_cast<size_t>(rank())]);
  q.expected = flat ? flat_reference(c.dtype, c.op, inputs) : hierarchical_reference(c.dtype, c.op, inputs, layout);
  q.output = c.in_place ? q.input : upload(device, Bytes(q.expected.size(), 0xa5));
  if (chorus::is_floating_point(c.dtype)) {
    q.magnitude.assign(static_cast<size_t>(c.count), 0.0);
    for (const Bytes& input : inputs) {
      for (int64_t i = 0; i < c.count; ++i) q.magnitude[static_cast<size_t>(i)] += std::fabs(value_at(c.dtype, input, i));
    }
  }
  return q;
}

inline void start_allreduce(chorus::Backend& backend, PreparedAllreduce& q) {
  q.work = backend.allreduce(q.input.get(), q.output.get(), q.c.count, q.c.dtype, q.c.op, q.c.factor);
}

// Waits for the work and compares the output with the reference.
inline void check_allreduce(chorus::DeviceOps& device, const HostLayout& layout, Match match, PreparedAllreduce& q) {
  using namespace device_check_detail;
  const AllreduceCase& c = q.c;
  const chorus::Status status = q.work->wait();
  ASSERT_TRUE(status.ok()) << c.describe(layout) << ": " << status.to_string();
  const Bytes actual = download(device, q.output.get(), q.expected.size());
  const bool any_order =
      match == Match::kAnyOrder && (c.op == chorus::ReduceOp::kSum || c.op == chorus::ReduceOp::kProduct);
  if (!chorus::is_floating_point(c.dtype) || (c.factor == 1.0 && !any_order)) {
    const std::vector<int64_t> wrong = differing_elements(actual, q.expected, chorus::dtype_size(c.dtype));
    EXPECT_TRUE(wrong.empty()) << c.describe(layout) << ": element " << wrong.front() << " differs from the "
                               << (match == Match::kAnyOrder ? "" : "hierarchical ") << "reference";
    return;
  }
  // Scaled once (scaling twice, or not at all, is far outside), and where
  // the order is free, as many roundings as ranks of the partial sums.
  const double eps = epsilon(c.dtype);
  int wrong = 0;
  for (int64_t i = 0; i < c.count && wrong < 5; ++i) {
    const double expected = value_at(c.dtype, q.expected, i) * c.factor;
    const double got = value_at(c.dtype, actual, i);
    double tolerance = 2 * eps * std::fabs(expected) + 2 * tiniest(c.dtype);
    if (any_order && c.op == chorus::ReduceOp::kSum) {
      tolerance += 2 * size() * eps * q.magnitude[static_cast<size_t>(i)] * std::fabs(c.factor);
    } else if (any_order) {
      tolerance += 2 * size() * eps * std::fabs(expected);
    }
    if (!(std::fabs(got - expected) <= tolerance)) {
      ++wrong;
      ADD_FAILURE() << c.describe(layout) << ": element " << i << " is " << got << ", expected " << expected
                    << " within " << tolerance;
    }
  }
}

}  // namespace chorus_test
