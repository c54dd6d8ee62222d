// The public allreduce on a device's memory, through the whole runtime: a
// batch of cases (dtype, op, pre- and postscale) on several shapes submitted
// together, so that they fuse where the threshold allows, then each result
// against the reference on the host. One body for every device a runtime
// test runs on (the asynchronous test device, the hierarchical device
// backend, NCCL, the host-staged GPU backend); each test brings the cases its
// backend supports and how to move a buffer to and from its memory.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {

struct AllreduceCase {
  chorus::DataType dtype;
  chorus::ReduceOp op;
  double prescale = 1.0;
  double postscale = 1.0;
};

// What every device passes: floats, integers and 16-bit types, sums,
// averages and a maximum, scaled and not.
inline std::vector<AllreduceCase> common_allreduce_cases() {
  using chorus::DataType;
  using chorus::ReduceOp;
  return {{DataType::kFloat32, ReduceOp::kSum},     {DataType::kFloat32, ReduceOp::kAverage},
          {DataType::kFloat64, ReduceOp::kMax},     {DataType::kInt32, ReduceOp::kAverage},
          {DataType::kInt64, ReduceOp::kSum},       {DataType::kFloat16, ReduceOp::kAverage},
          {DataType::kBFloat16, ReduceOp::kSum},    {DataType::kFloat32, ReduceOp::kSum, 0.5, 3},
          {DataType::kFloat64, ReduceOp::kAverage, 2, 0.25}};
}

inline chorus::AllreduceOptions allreduce_options(chorus::ReduceOp op, double prescale = 1.0,
                                                  double postscale = 1.0) {
  chorus::AllreduceOptions options;
  options.op = op;
  options.prescale_factor = prescale;
  options.postscale_factor = postscale;
  return options;
}

// Names the ops "<prefix>.<n>". `upload(const Buffer&)` returns the tensor in
// the device's memory; `download(const chorus::Tensor&)` the Buffer read back.
// A product's inputs stay near 1 so that it cannot overflow.
template <typename Upload, typename Download>
void expect_allreduces(const std::string& prefix, const std::vector<AllreduceCase>& cases,
                       const std::vector<chorus::Shape>& shapes, uint64_t seed, Upload upload, Download download) {
  struct Pending {
    std::string name;
    chorus::Tensor tensor;
    std::vector<double> expected;
    chorus::Handle handle;
  };
  std::vector<Pending> pending;
  int index = 0;
  for (const AllreduceCase& c : cases) {
    for (const chorus::Shape& shape : shapes) {
      Pending& p = pending.emplace_back();
      p.name = prefix + "." + std::to_string(index);
      const Values values = c.op == chorus::ReduceOp::kProduct ? Values::kProduct : Values::kSmall;
      const auto inputs = make_inputs(c.dtype, shape, world_size(), index++, seed, values);
      p.expected = reference_reduce(inputs, c.op, c.prescale, c.postscale);
      p.tensor = upload(inputs[static_cast<size_t>(world_rank())]);
      const chorus::AllreduceOptions options = allreduce_options(c.op, c.prescale, c.postscale);
      p.handle = submit([&] { return chorus::allreduce_async(p.name, p.tensor, options); });
    }
  }
  for (Pending& p : pending) {
    SCOPED_TRACE(p.name);
    ASSERT_DONE(p.handle);
    EXPECT_TRUE(matches(download(p.tensor).tensor(), p.expected));
  }
}

}  // namespace chorus_test
