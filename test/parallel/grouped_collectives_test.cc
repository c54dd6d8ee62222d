// Grouped allgather and grouped reducescatter through the public API: every
// member's output checked against support/reference (ranks bring different
// numbers of rows; members of several dtypes and sizes, so that some fuse,
// some do not fit the fusion threshold and run alone, and dtypes that differ
// never share a unit), outputs() in member order, the caller's allocators
// (one per member), a group on a process set, the blocking forms, and a
// group whose members disagree between ranks failing as a unit on every
// rank. The fusion itself is seen in a trace (timeline_control_test.cc).
#include <deque>
#include <string>
#include <vector>

#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

using chorus::Handle;
using chorus::OutputAllocator;
using chorus::Status;
using chorus::StatusCode;
using chorus::Tensor;

constexpr uint64_t kSeed = 0x9a0b;
// Bytes: the small members of a group fit together; kLargeRows rows of 8
// float64 do not, and run alone.
constexpr const char* kFusionThreshold = "4096";
constexpr int64_t kLargeRows = 80;

// One member: its shape on each rank (the first dimension may differ for
// allgather) and dtype.
struct Member {
  DataType dtype;
  Shape (*shape_of)(int rank);
};

Shape rows_by_rank(int rank) { return {1 + rank % 3, 4}; }
Shape no_rows_on_odd(int rank) { return {rank % 2 == 0 ? 2 : 0, 3}; }
Shape three_dims(int rank) { return {2 + rank, 2, 3}; }
Shape large(int) { return {kLargeRows, 8}; }
Shape single_column(int rank) { return {3 + rank}; }

const std::vector<Member>& allgather_members() {
  static const std::vector<Member> members = {
      {DataType::kFloat32, rows_by_rank}, {DataType::kInt32, no_rows_on_odd}, {DataType::kFloat32, three_dims},
      {DataType::kFloat64, large},        {DataType::kBool, single_column},   {DataType::kFloat32, single_column},
      {DataType::kFloat16, rows_by_rank}, {DataType::kUInt8, three_dims},
  };
  return members;
}

// Reducescatter: the same shape on every rank, rows that do not divide evenly.
const std::vector<Member>& reducescatter_members() {
  static const std::vector<Member> members = {
      {DataType::kFloat32, [](int) { return Shape{7, 3}; }},
      {DataType::kInt32, [](int) { return Shape{5}; }},
      {DataType::kFloat32, [](int) { return Shape{2, 2, 2}; }},  // fewer rows than ranks at np 3 and 4
      {DataType::kFloat64, large},
      {DataType::kFloat32, [](int) { return Shape{9, 1}; }},
      {DataType::kBFloat16, [](int) { return Shape{6, 2}; }},
  };
  return members;
}

class GroupedCollectives : public ChorusSuite {
 protected:
  static void SetUpTestSuite() {
    ScopedEnv env("CHORUS_FUSION_THRESHOLD", kFusionThreshold);
    ChorusSuite::SetUpTestSuite();
  }

  // Every rank's input of member `m` of `members` under `index`.
  std::vector<Buffer> inputs_of(const std::vector<Member>& members, size_t m, int index) const {
    std::vector<Buffer> inputs;
    for (int r = 0; r < size(); ++r) {
      inputs.push_back(make_input(members[m].dtype, members[m].shape_of(r), r, index + static_cast<int>(m), kSeed));
    }
    return inputs;
  }

  // Checks a grouped allgather's outputs against the concatenation of every
  // rank's member.
  void expect_gathered(const std::vector<Tensor>& outputs, const std::vector<std::vector<Buffer>>& inputs) {
    ASSERT_EQ(outputs.size(), inputs.size());
    for (size_t m = 0; m < outputs.size(); ++m) {
      EXPECT_TRUE(same_bytes(outputs[m], reference_allgather(inputs[m]))) << "member " << m;
    }
  }
};

TEST_F(GroupedCollectives, AllgatherGivesEveryMembersConcatenationInMemberOrder) {
  const std::vector<Member>& members = allgather_members();
  // Twice: the second run's members are the response cache's hits.
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    std::vector<std::vector<Buffer>> inputs;
    std::vector<Buffer> mine;
    for (size_t m = 0; m < members.size(); ++m) {
      inputs.push_back(inputs_of(members, m, 10 * run));
      mine.push_back(inputs.back()[static_cast<size_t>(rank())]);
    }
    std::vector<Tensor> tensors;
    for (Buffer& b : mine) tensors.push_back(b.tensor());
    Handle handle = submit([&] { return chorus::grouped_allgather_async("grouped.gather", tensors); });
    ASSERT_DONE(handle);
    EXPECT_EQ(handle.name(), "grouped.gather");
    expect_gathered(handle.outputs(), inputs);
  }
}

TEST_F(GroupedCollectives, ReducescatterGivesEachRankItsRowsOfEveryMember) {
  const std::vector<Member>& members = reducescatter_members();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
    SCOPED_TRACE(chorus::reduce_op_name(op));
    std::vector<std::vector<Buffer>> inputs;
    std::vector<Buffer> mine;
    for (size_t m = 0; m < members.size(); ++m) {
      inputs.push_back(inputs_of(members, m, 100 + 10 * static_cast<int>(op)));
      mine.push_back(inputs.back()[static_cast<size_t>(rank())]);
    }
    std::vector<Tensor> tensors;
    for (Buffer& b : mine) tensors.push_back(b.tensor());
    const std::string name = std::string("grouped.scatter.") + chorus::reduce_op_name(op);
    Handle handle = submit([&] { return chorus::grouped_reducescatter_async(name, tensors, op); });
    ASSERT_DONE(handle);
    const std::vector<Tensor> outputs = handle.outputs();
    ASSERT_EQ(outputs.size(), members.size());
    for (size_t m = 0; m < members.size(); ++m) {
      Shape expected_shape = members[m].shape_of(rank());
      const auto rows = reducescatter_rows(expected_shape[0], size(), rank());
      expected_shape[0] = rows.second - rows.first;
      EXPECT_EQ(outputs[m].shape, expected_shape) << "member " << m;
      EXPECT_EQ(outputs[m].dtype, members[m].dtype) << "member " << m;
      EXPECT_TRUE(matches(outputs[m], reference_reducescatter(inputs[m], op, rank()))) << "member " << m;
    }
  }
}

TEST_F(GroupedCollectives, ReducescatterOptionsScaleEveryMember) {
  const std::vector<Member>& members = reducescatter_members();
  std::vector<std::vector<Buffer>> inputs;
  std::vector<Buffer> mine;
  for (size_t m = 0; m < members.size(); ++m) {
    inputs.push_back(inputs_of(members, m, 150));
    mine.push_back(inputs.back()[static_cast<size_t>(rank())]);
  }
  std::vector<Tensor> tensors;
  for (Buffer& b : mine) tensors.push_back(b.tensor());
  chorus::ReducescatterOptions options;
  options.op = ReduceOp::kSum;
  options.prescale_factor = 0.5;
  options.postscale_factor = 3.0;
  Handle handle = submit([&] { return chorus::grouped_reducescatter_async("grouped.scaled", tensors, options); });
  ASSERT_DONE(handle);
  const std::vector<Tensor> outputs = handle.outputs();
  ASSERT_EQ(outputs.size(), members.size());
  for (size_t m = 0; m < members.size(); ++m) {
    // The scaled reduction's rows of this rank (integers as Horovod scales them).
    const std::vector<double> full = reference_reduce(inputs[m], ReduceOp::kSum, 0.5, 3.0);
    const Shape shape = members[m].shape_of(rank());
    const auto rows = reducescatter_rows(shape[0], size(), rank());
    const int64_t row = chorus::num_elements(shape) / shape[0];
    const std::vector<double> expected(full.begin() + rows.first * row, full.begin() + rows.second * row);
    EXPECT_TRUE(matches(outputs[m], expected)) << "member " << m;
  }
}

TEST_F(GroupedCollectives, EachMemberUsesItsOwnAllocator) {
  const std::vector<Member>& members = allgather_members();
  std::vector<std::vector<Buffer>> inputs;
  std::vector<Buffer> mine;
  for (size_t m = 0; m < 3; ++m) {
    inputs.push_back(inputs_of(members, m, 200));
    mine.push_back(inputs.back()[static_cast<size_t>(rank())]);
  }
  // Each allocator records what it was asked for and hands out its own buffer.
  std::deque<Buffer> allocated(3);
  std::vector<Shape> asked(3);
  std::vector<OutputAllocator> allocators;
  for (size_t m = 0; m < 3; ++m) {
    allocators.push_back([&, m](const Shape& shape, DataType dtype, chorus::Device device, Tensor* out) {
      asked[m] = shape;
      allocated[m] = Buffer(dtype, shape);
      *out = Tensor(allocated[m].data(), dtype, shape, device);
      return Status::OK();
    });
  }
  std::vector<Tensor> tensors;
  for (Buffer& b : mine) tensors.push_back(b.tensor());
  Handle handle = submit([&] { return chorus::grouped_allgather_async("grouped.allocators", tensors, allocators); });
  ASSERT_DONE(handle);
  const std::vector<Tensor> outputs = handle.outputs();
  ASSERT_EQ(outputs.size(), 3u);
  for (size_t m = 0; m < 3; ++m) {
    EXPECT_EQ(outputs[m].data, allocated[m].data()) << "member " << m;
    EXPECT_EQ(asked[m], reference_allgather(inputs[m]).shape()) << "member " << m;
  }
  expect_gathered(outputs, inputs);
}

TEST_F(GroupedCollectives, BlockingFormsReturnTheirDoneHandle) {
  const std::vector<Member>& gather_members = allgather_members();
  const std::vector<Member>& scatter_members = reducescatter_members();
  std::vector<std::vector<Buffer>> gather_inputs, scatter_inputs;
  std::vector<Buffer> gather_mine, scatter_mine;
  for (size_t m = 0; m < 2; ++m) {
    gather_inputs.push_back(inputs_of(gather_members, m, 300));
    gather_mine.push_back(gather_inputs.back()[static_cast<size_t>(rank())]);
    scatter_inputs.push_back(inputs_of(scatter_members, m, 310));
    scatter_mine.push_back(scatter_inputs.back()[static_cast<size_t>(rank())]);
  }
  const Handle gathered = chorus::grouped_allgather("grouped.blocking.gather",
                                                    {gather_mine[0].tensor(), gather_mine[1].tensor()});
  EXPECT_TRUE(gathered.test());
  expect_gathered(gathered.outputs(), gather_inputs);
  const Handle scattered = chorus::grouped_reducescatter(
      "grouped.blocking.scatter", {scatter_mine[0].tensor(), scatter_mine[1].tensor()}, ReduceOp::kSum);
  EXPECT_TRUE(scattered.test());
  const std::vector<Tensor> outputs = scattered.outputs();
  ASSERT_EQ(outputs.size(), 2u);
  for (size_t m = 0; m < 2; ++m) {
    EXPECT_TRUE(matches(outputs[m], reference_reducescatter(scatter_inputs[m], ReduceOp::kSum, rank())));
  }
}

TEST_F(GroupedCollectives, GroupOnAProcessSet) {
  // The even ranks: at np 2 a set of one.
  std::vector<int> evens;
  for (int r = 0; r < size(); r += 2) evens.push_back(r);
  const chorus::ProcessSet set = chorus::add_process_set(evens);
  if (rank() % 2 == 0) {
    const int set_rank = rank() / 2;
    const int set_size = static_cast<int>(evens.size());
    std::vector<std::vector<Buffer>> gather_inputs(2), scatter_inputs(2);
    for (size_t m = 0; m < 2; ++m) {
      for (int r : evens) {
        gather_inputs[m].push_back(make_input(DataType::kFloat32, rows_by_rank(r), r, 400 + static_cast<int>(m), kSeed));
        scatter_inputs[m].push_back(make_input(DataType::kInt32, {5, 2}, r, 410 + static_cast<int>(m), kSeed));
      }
    }
    Buffer g0 = gather_inputs[0][static_cast<size_t>(set_rank)], g1 = gather_inputs[1][static_cast<size_t>(set_rank)];
    Buffer s0 = scatter_inputs[0][static_cast<size_t>(set_rank)], s1 = scatter_inputs[1][static_cast<size_t>(set_rank)];
    Handle gather = submit(
        [&] { return chorus::grouped_allgather_async("grouped.set.gather", {g0.tensor(), g1.tensor()}, {}, set); });
    Handle scatter = submit([&] {
      return chorus::grouped_reducescatter_async("grouped.set.scatter", {s0.tensor(), s1.tensor()}, ReduceOp::kSum,
                                                 {}, set);
    });
    // No early return: every rank must reach the removal below.
    const Status gathered = finish(gather);
    const Status scattered = finish(scatter);
    EXPECT_TRUE(is_ok(gathered));
    EXPECT_TRUE(is_ok(scattered));
    if (gathered.ok()) expect_gathered(gather.outputs(), gather_inputs);
    const std::vector<Tensor> outputs = scattered.ok() ? scatter.outputs() : std::vector<Tensor>{};
    EXPECT_EQ(outputs.size(), 2u);
    for (size_t m = 0; m < outputs.size(); ++m) {
      EXPECT_TRUE(matches(outputs[m], reference_reducescatter(scatter_inputs[m], ReduceOp::kSum, set_rank)))
          << "member " << m << " of " << set_size;
    }
  }
  chorus::remove_process_set(set);
}

// What every rank's handle of a group ended with, or the error it threw.
Status outcome_of(const std::function<Handle()>& call) {
  Handle handle;
  const Status thrown = thrown_by([&] { handle = call(); });
  if (!thrown.ok()) return thrown;
  return finish(handle, std::chrono::seconds(30));
}

TEST_F(GroupedCollectives, MembersThatDisagreeFailTheWholeGroupOnEveryRank) {
  Buffer a(DataType::kFloat32, {2, 3}), b(DataType::kFloat32, {2, 3}), c(DataType::kFloat32, {1, 3});
  Buffer wide(DataType::kFloat32, {2, 4});
  // Ranks hold the group in different sizes.
  const bool odd = rank() % 2 == 1;
  Status status = outcome_of([&] {
    return odd ? chorus::grouped_allgather_async("grouped.mm.size", {a.tensor(), b.tensor()})
               : chorus::grouped_allgather_async("grouped.mm.size", {a.tensor()});
  });
  EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
  EXPECT_EQ(status.message(), "Mismatched group for allgather 'grouped.mm.size.0': rank 0 has group "
                              "'grouped.mm.size' of 1, rank 1 has group 'grouped.mm.size' of 2");
  // One member's trailing dimension differs: the group fails with its error.
  status = outcome_of([&] {
    return chorus::grouped_allgather_async("grouped.mm.shape", {a.tensor(), odd ? wide.tensor() : b.tensor(),
                                                                c.tensor()});
  });
  EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
  EXPECT_EQ(status.message(), "Mismatched shape for allgather 'grouped.mm.shape.1': rank 0 has [2, 3], rank 1 "
                              "has [2, 4]");
  status = outcome_of([&] {
    return chorus::grouped_reducescatter_async("grouped.mm.op", {a.tensor(), b.tensor()},
                                               odd ? ReduceOp::kMax : ReduceOp::kSum);
  });
  EXPECT_EQ(status.code(), StatusCode::kMismatch) << status.message();
  EXPECT_EQ(status.message(), "Mismatched reduce op for reducescatter 'grouped.mm.op.0': rank 0 has sum, rank 1 "
                              "has max");
  // The runtime goes on.
  std::vector<Buffer> inputs = inputs_of(allgather_members(), 0, 500);
  Buffer mine = inputs[static_cast<size_t>(rank())];
  Handle after = submit([&] { return chorus::grouped_allgather_async("grouped.mm.after", {mine.tensor()}); });
  ASSERT_DONE(after);
  expect_gathered(after.outputs(), {inputs});
}

TEST_F(GroupedCollectives, BadArgumentsAreRefusedBeforeAnythingIsSubmitted) {
  Buffer a(DataType::kFloat32, {2, 3});
  Buffer scalar(DataType::kFloat32, {});
  const auto refused = [](const std::function<void()>& call, const std::string& message) {
    const Status status = thrown_by(call);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
    EXPECT_EQ(status.message(), message);
  };
  refused([&] { (void)chorus::grouped_allgather_async("grouped.none", {}); },
          "'grouped.none': grouped allgather got no inputs; expected at least one");
  refused([&] { (void)chorus::grouped_reducescatter_async("grouped.none", {}); },
          "'grouped.none': grouped reducescatter got no inputs; expected at least one");
  refused([&] { (void)chorus::grouped_allgather_async("grouped.alloc", {a.tensor(), a.tensor()}, {nullptr}); },
          "'grouped.alloc': grouped allgather got 2 inputs and 1 output allocators; expected one allocator per "
          "input, or none");
  refused([&] { (void)chorus::grouped_allgather_async("grouped.scalar", {a.tensor(), scalar.tensor()}); },
          "'grouped.scalar.1': allgather needs a tensor with at least one dimension, not a scalar");
  refused([&] { (void)chorus::grouped_reducescatter_async("chorus.reserved", {a.tensor()}); },
          "'chorus.reserved': names starting with 'chorus.' are reserved for Chorus");
  // A group's handle has one output per member: output() says so.
  std::vector<Buffer> inputs = inputs_of(allgather_members(), 0, 600);
  Buffer mine = inputs[static_cast<size_t>(rank())];
  Handle pair = submit([&] { return chorus::grouped_allgather_async("grouped.pair", {mine.tensor(), mine.tensor()}); });
  ASSERT_DONE(pair);
  refused([&] { (void)pair.output(); },
          "output() applies to a single collective's handle, not to group 'grouped.pair' of 2 tensors: use outputs()");
  expect_gathered(pair.outputs(), {inputs, inputs});
}

}  // namespace
}  // namespace chorus_test
