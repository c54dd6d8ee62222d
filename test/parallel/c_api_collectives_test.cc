// Every collective through the C API (chorus/c_api.h, libchorus_c), checked
// against support/reference: allreduce (every dtype x every reduce op, in
// place and out of place, prescale/postscale, integers scaled as Horovod
// does), Adasum, grouped allreduce, allgather, broadcast, alltoall,
// reducescatter (scaled too), grouped allgather and reducescatter (each
// member's output read from the one handle), barrier, join, point-to-point,
// process sets (added at run time and at init), the timeline started and
// stopped at run time, and the handle functions that read a result. Only
// the C API is called: the library holds its own copy of the runtime, so
// this binary's C++ runtime is never started.
#include <chorus/c_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <vector>

#include "support/adasum_reference.h"
#include "support/chrome_trace.h"
#include "support/harness.h"
#include "support/reference.h"

namespace chorus_test {
namespace {

constexpr uint64_t kSeed = 0xcab1;

// The C API's codes for the dtypes and ops, written out independently of
// the library's own table.
struct CType {
  DataType dtype;
  int code;
};
const std::vector<CType>& numeric_ctypes() {
  static const std::vector<CType> kTypes = {
      {DataType::kUInt8, CHORUS_UINT8},     {DataType::kInt8, CHORUS_INT8},
      {DataType::kInt16, CHORUS_INT16},     {DataType::kUInt16, CHORUS_UINT16},
      {DataType::kInt32, CHORUS_INT32},     {DataType::kInt64, CHORUS_INT64},
      {DataType::kFloat16, CHORUS_FLOAT16}, {DataType::kBFloat16, CHORUS_BFLOAT16},
      {DataType::kFloat32, CHORUS_FLOAT32}, {DataType::kFloat64, CHORUS_FLOAT64}};
  return kTypes;
}
struct COp {
  ReduceOp op;
  int code;
};
const std::vector<COp>& c_ops() {
  static const std::vector<COp> kOps = {{ReduceOp::kSum, CHORUS_OP_SUM},
                                        {ReduceOp::kAverage, CHORUS_OP_AVERAGE},
                                        {ReduceOp::kMin, CHORUS_OP_MIN},
                                        {ReduceOp::kMax, CHORUS_OP_MAX},
                                        {ReduceOp::kProduct, CHORUS_OP_PRODUCT}};
  return kOps;
}

// A chorus_tensor_t over a Buffer (which must outlive it, as must `shape`).
chorus_tensor_t c_tensor(Buffer& buffer, int code) {
  chorus_tensor_t t{};
  t.data = buffer.data();
  t.dtype = code;
  t.ndim = static_cast<int>(buffer.shape().size());
  t.shape = buffer.shape().data();
  t.device_type = CHORUS_DEVICE_CPU;
  return t;
}

// Success, or a failure naming the code and the thread's last error.
::testing::AssertionResult ok(chorus_result_t result) {
  if (result == CHORUS_SUCCESS) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << chorus_result_string(result) << ": " << chorus_last_error();
}

// Waits for a handle without ever blocking past the harness's timeout.
::testing::AssertionResult done(chorus_handle_t handle) {
  const chorus_result_t result = chorus_handle_wait_timeout(handle, kWaitTimeout.count());
  if (result == CHORUS_SUCCESS) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << chorus_result_string(result) << ": " << chorus_handle_error(handle);
}

// The output a handle owns, copied into a Buffer of its dtype and shape.
Buffer output_of(chorus_handle_t handle, DataType dtype) {
  int ndim = -1, code = -1;
  size_t bytes = 0;
  EXPECT_TRUE(ok(chorus_handle_output_shape(handle, nullptr, 0, &ndim)));
  std::vector<int64_t> shape(static_cast<size_t>(std::max(ndim, 0)));
  EXPECT_TRUE(ok(chorus_handle_output_shape(handle, shape.data(), ndim, &ndim)));
  EXPECT_TRUE(ok(chorus_handle_output_dtype(handle, &code)));
  EXPECT_TRUE(ok(chorus_handle_output_bytes(handle, &bytes)));
  Buffer out(dtype, shape);
  EXPECT_EQ(bytes, out.bytes());
  EXPECT_TRUE(ok(chorus_handle_output_copy(handle, out.data(), out.bytes())));
  // The pointer form gives the same bytes.
  void* data = nullptr;
  EXPECT_TRUE(ok(chorus_handle_output_data(handle, &data)));
  if (data != nullptr && bytes > 0) {
    EXPECT_EQ(std::memcmp(data, out.data(), bytes), 0);
  }
  return out;
}

// Member `member`'s output of a handle, read as output_of() reads a single
// one (shape, dtype code, bytes, copy and pointer).
Buffer member_output_of(chorus_handle_t handle, int member, DataType dtype, int code) {
  int ndim = -1, got_code = -1;
  size_t bytes = 0;
  EXPECT_TRUE(ok(chorus_handle_output_shape_member(handle, member, nullptr, 0, &ndim)));
  std::vector<int64_t> shape(static_cast<size_t>(std::max(ndim, 0)));
  EXPECT_TRUE(ok(chorus_handle_output_shape_member(handle, member, shape.data(), ndim, &ndim)));
  EXPECT_TRUE(ok(chorus_handle_output_dtype_member(handle, member, &got_code)));
  EXPECT_EQ(got_code, code);
  EXPECT_TRUE(ok(chorus_handle_output_bytes_member(handle, member, &bytes)));
  Buffer out(dtype, shape);
  EXPECT_EQ(bytes, out.bytes());
  EXPECT_TRUE(ok(chorus_handle_output_copy_member(handle, member, out.data(), out.bytes())));
  void* data = nullptr;
  EXPECT_TRUE(ok(chorus_handle_output_data_member(handle, member, &data)));
  if (data != nullptr && bytes > 0) {
    EXPECT_EQ(std::memcmp(data, out.data(), bytes), 0);
  }
  return out;
}

// The factors of scaled_reductions_test: for floating dtypes one pair that
// keeps kSmall inputs exact and one that rounds; for integers fractions that
// truncate, a negative one (unsigned results saturate at 0) and a large one
// that saturates.
struct Factors {
  double pre;
  double post;
};
std::vector<Factors> factors_for(DataType dtype) {
  if (chorus::is_floating_point(dtype)) return {{0.5, 3.0}, {2.0, 0.1}};
  return {{0.5, 3.0}, {1.0, -0.37}, {40.0, 25.0}};
}

class CApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(ok(chorus_init(nullptr))); }
  static void TearDownTestSuite() {
    test_barrier();
    EXPECT_TRUE(ok(chorus_shutdown()));
  }
  void SetUp() override {
    ASSERT_EQ(chorus_is_initialized(), 1);
    int r = -1, s = -1;
    ASSERT_TRUE(ok(chorus_rank(&r)));
    ASSERT_TRUE(ok(chorus_size(&s)));
    ASSERT_EQ(r, world_rank());
    ASSERT_EQ(s, world_size());
  }
  int rank() const { return world_rank(); }
  int size() const { return world_size(); }
};

TEST_F(CApiTest, RanksAndBuildFlags) {
  int local_rank = -1, local_size = -1, cross_rank = -1, cross_size = -1;
  ASSERT_TRUE(ok(chorus_local_rank(&local_rank)));
  ASSERT_TRUE(ok(chorus_local_size(&local_size)));
  ASSERT_TRUE(ok(chorus_cross_rank(&cross_rank)));
  ASSERT_TRUE(ok(chorus_cross_size(&cross_size)));
  // One host: every rank is local, in job order (the CTest run is on one machine).
  EXPECT_EQ(local_rank, rank());
  EXPECT_EQ(local_size, size());
  EXPECT_EQ(cross_rank, 0);
  EXPECT_EQ(cross_size, 1);
  const uint32_t flags = chorus_build_flags();
  EXPECT_TRUE(flags & CHORUS_BUILD_MPI);
  EXPECT_TRUE(flags & CHORUS_BUILD_SHARED_MEMORY);
  EXPECT_FALSE(flags & CHORUS_BUILD_GLOO);
#ifdef CHORUS_TEST_WITH_CUDA
  EXPECT_TRUE(flags & CHORUS_BUILD_CUDA);
#else
  EXPECT_FALSE(flags & CHORUS_BUILD_CUDA);
#endif
#ifdef CHORUS_TEST_WITH_NCCL
  EXPECT_TRUE(flags & CHORUS_BUILD_NCCL);
#else
  EXPECT_FALSE(flags & CHORUS_BUILD_NCCL);
#endif
  EXPECT_EQ(chorus_c_api_version(), CHORUS_C_API_VERSION);
  EXPECT_STREQ(chorus_version(), CHORUS_TEST_VERSION);
}

TEST_F(CApiTest, AllreduceEveryDtypeAndOpInPlaceAndOutOfPlace) {
  struct Pending {
    std::string name;
    Buffer input, output, original;
    std::vector<double> expected;
    bool in_place;
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
  };
  std::deque<Pending> pending;
  const Shape shape = {5, 3};
  int index = 0;
  for (const CType& type : numeric_ctypes()) {
    for (const COp& op : c_ops()) {
      for (bool in_place : {true, false}) {
        const auto inputs = make_inputs(type.dtype, shape, size(), index, kSeed,
                                        op.op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall);
        Pending& p = pending.emplace_back();
        p.name = std::string("allreduce.") + chorus::dtype_name(type.dtype) + "." + chorus::reduce_op_name(op.op) +
                 (in_place ? ".in_place" : ".out_of_place");
        p.input = inputs[rank()];
        p.original = inputs[rank()];
        p.output = make_input(type.dtype, shape, rank(), index + 1000, kSeed);
        p.expected = reference_reduce(inputs, op.op);
        p.in_place = in_place;
        chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
        options.op = op.code;
        const chorus_tensor_t in = c_tensor(p.input, type.code);
        const chorus_tensor_t out = c_tensor(p.output, type.code);
        EXPECT_TRUE(ok(chorus_allreduce_async(p.name.c_str(), &in, in_place ? nullptr : &out, &options, &p.handle)))
            << p.name;
        ++index;
      }
    }
  }
  for (Pending& p : pending) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(done(p.handle));
    EXPECT_TRUE(matches(p.in_place ? p.input.tensor() : p.output.tensor(), p.expected));
    if (!p.in_place) {
      EXPECT_TRUE(same_bytes(p.input.tensor(), p.original));
    }
    EXPECT_TRUE(ok(chorus_handle_release(p.handle)));
  }
}

TEST_F(CApiTest, AllreduceDefaultsToAverageAndScales) {
  for (const CType& type : numeric_ctypes()) {
    if (!chorus::is_floating_point(type.dtype)) continue;
    SCOPED_TRACE(chorus::dtype_name(type.dtype));
    const auto inputs = make_inputs(type.dtype, {9}, size(), 0, kSeed + 1);
    // No options: the C++ API's default, the average.
    Buffer averaged = inputs[rank()];
    chorus_tensor_t t = c_tensor(averaged, type.code);
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
    ASSERT_TRUE(ok(chorus_allreduce_async("average.default", &t, nullptr, nullptr, &handle)));
    EXPECT_TRUE(done(handle));
    EXPECT_TRUE(matches(averaged.tensor(), reference_reduce(inputs, ReduceOp::kAverage)));
    EXPECT_TRUE(ok(chorus_handle_release(handle)));

    Buffer scaled = inputs[rank()];
    t = c_tensor(scaled, type.code);
    chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
    options.op = CHORUS_OP_SUM;
    options.prescale_factor = 0.5;
    options.postscale_factor = 3.0;
    ASSERT_TRUE(ok(chorus_allreduce_async("sum.scaled", &t, nullptr, &options, &handle)));
    EXPECT_TRUE(done(handle));
    EXPECT_TRUE(matches(scaled.tensor(), reference_reduce(inputs, ReduceOp::kSum, 0.5, 3.0)));
    EXPECT_TRUE(ok(chorus_handle_release(handle)));
  }
}

// The C layer passes integer factors on: Horovod's truncation, as the C++ API.
TEST_F(CApiTest, IntegerAllreduceScalesAsHorovod) {
  struct Pending {
    std::string name;
    Buffer buffer;
    std::vector<double> expected;
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
  };
  std::deque<Pending> pending;
  int index = 0;
  for (const CType& type : numeric_ctypes()) {
    if (chorus::is_floating_point(type.dtype)) continue;
    // The sum, and the average that folds into the postscale.
    for (const COp& op : {COp{ReduceOp::kSum, CHORUS_OP_SUM}, COp{ReduceOp::kAverage, CHORUS_OP_AVERAGE}}) {
      for (const Factors& f : factors_for(type.dtype)) {
        const auto inputs = make_inputs(type.dtype, {7}, size(), index, kSeed + 10);
        Pending& p = pending.emplace_back();
        p.name = std::string("scaled.") + chorus::dtype_name(type.dtype) + "." + chorus::reduce_op_name(op.op) +
                 "." + std::to_string(index++);
        p.buffer = inputs[rank()];
        p.expected = reference_reduce(inputs, op.op, f.pre, f.post);
        chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
        options.op = op.code;
        options.prescale_factor = f.pre;
        options.postscale_factor = f.post;
        const chorus_tensor_t t = c_tensor(p.buffer, type.code);
        EXPECT_TRUE(ok(chorus_allreduce_async(p.name.c_str(), &t, nullptr, &options, &p.handle))) << p.name;
      }
    }
  }
  for (Pending& p : pending) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(done(p.handle));
    EXPECT_TRUE(matches(p.buffer.tensor(), p.expected));
    EXPECT_TRUE(ok(chorus_handle_release(p.handle)));
  }
}

// CHORUS_OP_ADASUM: the paper's formula (support/adasum_reference.h) within
// twice its first-order bound for float32 arithmetic, on 2 and 4 ranks; at 3
// the job's size is refused, naming it.
TEST_F(CApiTest, AdasumOnAPowerOfTwoJob) {
  std::vector<std::vector<double>> grads;
  for (int r = 0; r < size(); ++r) {
    Buffer input = make_input(DataType::kFloat32, {257}, r, 0, kSeed + 2, Values::kRandom);
    grads.push_back(values_of(input));
  }
  Buffer mine = make_input(DataType::kFloat32, {257}, rank(), 0, kSeed + 2, Values::kRandom);
  chorus_tensor_t t = c_tensor(mine, CHORUS_FLOAT32);
  chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
  options.op = CHORUS_OP_ADASUM;
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  const chorus_result_t result = chorus_allreduce_async("adasum", &t, nullptr, &options, &handle);
  if ((size() & (size() - 1)) != 0) {
    EXPECT_EQ(result, CHORUS_ERROR_INVALID_ARGUMENT);
    EXPECT_THAT(chorus_last_error(), ::testing::HasSubstr("'adasum': reduce op adasum needs a process set whose size "
                                                          "is a power of two (1, 2, 4, 8, ...), but process set 0 "
                                                          "has " + std::to_string(size()) + " ranks"));
    return;
  }
  ASSERT_TRUE(ok(result));
  EXPECT_TRUE(done(handle));
  const std::vector<double> expected = adasum_reference(grads);
  const double bound = 2.0 * adasum_tolerance(grads, 0x1p-24);
  for (int64_t i = 0; i < mine.elements(); ++i) EXPECT_NEAR(mine.get(i), expected[i], bound) << "element " << i;
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
}

TEST_F(CApiTest, GroupedAllreduceIsOneHandle) {
  const std::vector<Shape> shapes = {{4}, {2, 3}, {1}, {0}};
  std::vector<Buffer> inputs, outputs;
  std::vector<std::vector<double>> expected;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto all = make_inputs(DataType::kFloat32, shapes[i], size(), static_cast<int>(i), kSeed + 2);
    inputs.push_back(all[rank()]);
    outputs.emplace_back(DataType::kFloat32, shapes[i]);
    expected.push_back(reference_reduce(all, ReduceOp::kMax));
  }
  std::vector<chorus_tensor_t> in, out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    in.push_back(c_tensor(inputs[i], CHORUS_FLOAT32));
    out.push_back(c_tensor(outputs[i], CHORUS_FLOAT32));
  }
  chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
  options.op = CHORUS_OP_MAX;
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_grouped_allreduce_async("grouped", static_cast<int>(in.size()), in.data(), out.data(),
                                                &options, &handle)));
  EXPECT_TRUE(done(handle));
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_TRUE(matches(outputs[i].tensor(), expected[i])) << "member " << i;
  EXPECT_TRUE(ok(chorus_handle_release(handle)));

  // In place (outputs NULL), every member summed.
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto all = make_inputs(DataType::kFloat32, shapes[i], size(), static_cast<int>(i), kSeed + 2);
    expected[i] = reference_reduce(all, ReduceOp::kSum);
  }
  options.op = CHORUS_OP_SUM;
  ASSERT_TRUE(ok(chorus_grouped_allreduce_async("grouped.in_place", static_cast<int>(in.size()), in.data(), nullptr,
                                                &options, &handle)));
  EXPECT_TRUE(done(handle));
  for (size_t i = 0; i < shapes.size(); ++i) EXPECT_TRUE(matches(inputs[i].tensor(), expected[i])) << "member " << i;
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
}

TEST_F(CApiTest, AllgatherOfUnevenFirstDimensions) {
  for (const CType& type : numeric_ctypes()) {
    SCOPED_TRACE(chorus::dtype_name(type.dtype));
    std::vector<Buffer> inputs;
    for (int r = 0; r < size(); ++r) {
      inputs.push_back(make_input(type.dtype, {pick(0, 3, r, kSeed), 2}, r, 0, kSeed + 3));
    }
    chorus_tensor_t t = c_tensor(inputs[rank()], type.code);
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
    const std::string name = std::string("allgather.") + chorus::dtype_name(type.dtype);
    ASSERT_TRUE(ok(chorus_allgather_async(name.c_str(), &t, nullptr, &handle)));
    EXPECT_TRUE(done(handle));
    const Buffer gathered = output_of(handle, type.dtype);
    const Buffer expected = reference_allgather(inputs);
    EXPECT_EQ(gathered.shape(), expected.shape());
    Buffer copy = gathered;
    EXPECT_TRUE(same_bytes(copy.tensor(), expected));
    int code = -1;
    EXPECT_TRUE(ok(chorus_handle_output_dtype(handle, &code)));
    EXPECT_EQ(code, type.code);
    // A single collective's output is member 0 of 1.
    int count = -1;
    EXPECT_TRUE(ok(chorus_handle_output_count(handle, &count)));
    EXPECT_EQ(count, 1);
    Buffer member = member_output_of(handle, 0, type.dtype, type.code);
    EXPECT_TRUE(same_bytes(member.tensor(), expected));
    EXPECT_TRUE(ok(chorus_handle_release(handle)));
  }
}

TEST_F(CApiTest, BroadcastEveryDtypeFromEveryRoot) {
  std::vector<CType> types = numeric_ctypes();
  types.push_back({DataType::kBool, CHORUS_BOOL});
  for (const CType& type : types) {
    for (int root = 0; root < size(); ++root) {
      SCOPED_TRACE(std::string(chorus::dtype_name(type.dtype)) + " from " + std::to_string(root));
      const auto inputs = make_inputs(type.dtype, {3, 2}, size(), root, kSeed + 4);
      Buffer mine = inputs[rank()];
      chorus_tensor_t t = c_tensor(mine, type.code);
      chorus_handle_t handle = CHORUS_HANDLE_NULL;
      const std::string name = std::string("broadcast.") + chorus::dtype_name(type.dtype) + "." + std::to_string(root);
      ASSERT_TRUE(ok(chorus_broadcast_async(name.c_str(), &t, root, nullptr, &handle)));
      EXPECT_TRUE(done(handle));
      EXPECT_TRUE(same_bytes(mine.tensor(), inputs[root]));
      EXPECT_TRUE(ok(chorus_handle_release(handle)));
    }
  }
}

TEST_F(CApiTest, AlltoallWithSplitsAndEqualParts) {
  for (const CType& type : numeric_ctypes()) {
    SCOPED_TRACE(chorus::dtype_name(type.dtype));
    std::vector<std::vector<int64_t>> splits;
    std::vector<Buffer> inputs;
    for (int r = 0; r < size(); ++r) {
      splits.push_back(alltoall_splits(r, size(), kSeed));
      int64_t rows = 0;
      for (int64_t s : splits.back()) rows += s;
      inputs.push_back(make_input(type.dtype, {rows, 2}, r, 0, kSeed + 5));
    }
    chorus_tensor_t t = c_tensor(inputs[rank()], type.code);
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
    const std::string name = std::string("alltoall.") + chorus::dtype_name(type.dtype);
    ASSERT_TRUE(ok(chorus_alltoall_async(name.c_str(), &t, splits[rank()].data(),
                                         static_cast<int>(splits[rank()].size()), nullptr, &handle)));
    EXPECT_TRUE(done(handle));
    const AlltoallResult expected = reference_alltoall(inputs, splits, rank());
    Buffer received = output_of(handle, type.dtype);
    EXPECT_EQ(received.shape(), expected.output.shape());
    EXPECT_TRUE(same_bytes(received.tensor(), expected.output));
    int count = -1;
    EXPECT_TRUE(ok(chorus_handle_received_splits(handle, nullptr, 0, &count)));
    std::vector<int64_t> got(static_cast<size_t>(std::max(count, 0)));
    EXPECT_TRUE(ok(chorus_handle_received_splits(handle, got.data(), count, &count)));
    EXPECT_EQ(got, expected.received_splits);
    EXPECT_TRUE(ok(chorus_handle_release(handle)));
  }
  // No splits: equal parts.
  std::vector<Buffer> inputs;
  for (int r = 0; r < size(); ++r) inputs.push_back(make_input(DataType::kInt32, {2 * size()}, r, 1, kSeed + 5));
  chorus_tensor_t t = c_tensor(inputs[rank()], CHORUS_INT32);
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_alltoall_async("alltoall.equal", &t, nullptr, 0, nullptr, &handle)));
  EXPECT_TRUE(done(handle));
  const AlltoallResult expected =
      reference_alltoall(inputs, std::vector<std::vector<int64_t>>(static_cast<size_t>(size())), rank());
  Buffer received = output_of(handle, DataType::kInt32);
  EXPECT_TRUE(same_bytes(received.tensor(), expected.output));
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
}

TEST_F(CApiTest, ReducescatterEveryOpUnevenRows) {
  for (const CType& type : numeric_ctypes()) {
    for (const COp& op : c_ops()) {
      SCOPED_TRACE(std::string(chorus::dtype_name(type.dtype)) + "." + chorus::reduce_op_name(op.op));
      const auto inputs = make_inputs(type.dtype, {2 * size() + 1, 2}, size(), 0, kSeed + 6,
                                      op.op == ReduceOp::kProduct ? Values::kProduct : Values::kSmall);
      Buffer mine = inputs[rank()];
      chorus_tensor_t t = c_tensor(mine, type.code);
      chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
      options.op = op.code;
      chorus_handle_t handle = CHORUS_HANDLE_NULL;
      const std::string name =
          std::string("reducescatter.") + chorus::dtype_name(type.dtype) + "." + chorus::reduce_op_name(op.op);
      ASSERT_TRUE(ok(chorus_reducescatter_async(name.c_str(), &t, &options, &handle)));
      EXPECT_TRUE(done(handle));
      Buffer part = output_of(handle, type.dtype);
      const auto [begin, end] = reducescatter_rows(2 * size() + 1, size(), rank());
      EXPECT_EQ(part.shape(), (Shape{end - begin, 2}));
      EXPECT_TRUE(matches(part.tensor(), reference_reducescatter(inputs, op.op, rank())));
      EXPECT_TRUE(ok(chorus_handle_release(handle)));
    }
  }
  // No options: the sum (the C++ API's default for reducescatter).
  const auto inputs = make_inputs(DataType::kInt64, {size(), 1}, size(), 1, kSeed + 6);
  Buffer mine = inputs[rank()];
  chorus_tensor_t t = c_tensor(mine, CHORUS_INT64);
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_reducescatter_async("reducescatter.default", &t, nullptr, &handle)));
  EXPECT_TRUE(done(handle));
  Buffer part = output_of(handle, DataType::kInt64);
  EXPECT_TRUE(matches(part.tensor(), reference_reducescatter(inputs, ReduceOp::kSum, rank())));
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
}

// Every dtype with factors, several in flight at once, uneven rows.
TEST_F(CApiTest, ReducescatterScalesEveryDtype) {
  struct Pending {
    std::string name;
    Buffer input, original;
    std::vector<double> expected;
    Shape expected_shape;
    DataType dtype;
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
  };
  std::deque<Pending> pending;
  const int64_t rows = 2 * size() + 1;
  const auto [begin, end] = reducescatter_rows(rows, size(), rank());
  int index = 0;
  for (const CType& type : numeric_ctypes()) {
    for (const COp& op : {COp{ReduceOp::kSum, CHORUS_OP_SUM}, COp{ReduceOp::kAverage, CHORUS_OP_AVERAGE},
                          COp{ReduceOp::kMax, CHORUS_OP_MAX}}) {
      for (const Factors& f : factors_for(type.dtype)) {
        const auto inputs = make_inputs(type.dtype, {rows, 2}, size(), index, kSeed + 11);
        Pending& p = pending.emplace_back();
        p.name = std::string("reducescatter.scaled.") + chorus::dtype_name(type.dtype) + "." +
                 chorus::reduce_op_name(op.op) + "." + std::to_string(index++);
        p.input = inputs[rank()];
        p.original = inputs[rank()];
        p.expected = reference_reducescatter(inputs, op.op, rank(), f.pre, f.post);
        p.expected_shape = {end - begin, 2};
        p.dtype = type.dtype;
        chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
        options.op = op.code;
        options.prescale_factor = f.pre;
        options.postscale_factor = f.post;
        const chorus_tensor_t t = c_tensor(p.input, type.code);
        EXPECT_TRUE(ok(chorus_reducescatter_async(p.name.c_str(), &t, &options, &p.handle))) << p.name;
      }
    }
  }
  for (Pending& p : pending) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(done(p.handle));
    Buffer part = output_of(p.handle, p.dtype);
    EXPECT_EQ(part.shape(), p.expected_shape);
    EXPECT_TRUE(matches(part.tensor(), p.expected));
    EXPECT_TRUE(same_bytes(p.input.tensor(), p.original));  // prescaling works on a copy
    EXPECT_TRUE(ok(chorus_handle_release(p.handle)));
  }
}

// Members of several dtypes (bool too) and uneven first dimensions, one handle.
TEST_F(CApiTest, GroupedAllgatherOwnsEveryMembersOutput) {
  const std::vector<CType> types = {{DataType::kInt16, CHORUS_INT16},
                                    {DataType::kFloat32, CHORUS_FLOAT32},
                                    {DataType::kBool, CHORUS_BOOL},
                                    {DataType::kUInt16, CHORUS_UINT16}};
  std::vector<std::vector<Buffer>> all(types.size());
  std::vector<chorus_tensor_t> in;
  for (size_t m = 0; m < types.size(); ++m) {
    for (int r = 0; r < size(); ++r) {
      all[m].push_back(make_input(types[m].dtype, {pick(0, 3, r, m, kSeed), static_cast<int64_t>(m) + 1}, r,
                                  static_cast<int>(m), kSeed + 12));
    }
  }
  for (size_t m = 0; m < types.size(); ++m) in.push_back(c_tensor(all[m][static_cast<size_t>(rank())], types[m].code));
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_grouped_allgather_async("grouped.allgather", static_cast<int>(in.size()), in.data(), nullptr,
                                                &handle)));
  EXPECT_TRUE(done(handle));
  int count = -1;
  EXPECT_TRUE(ok(chorus_handle_output_count(handle, &count)));
  EXPECT_EQ(count, static_cast<int>(types.size()));
  for (size_t m = 0; m < types.size(); ++m) {
    SCOPED_TRACE("member " + std::to_string(m));
    Buffer gathered = member_output_of(handle, static_cast<int>(m), types[m].dtype, types[m].code);
    const Buffer expected = reference_allgather(all[m]);
    EXPECT_EQ(gathered.shape(), expected.shape());
    EXPECT_TRUE(same_bytes(gathered.tensor(), expected));
  }
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
}

// Options reach every member: the op and both factors, integers truncated.
TEST_F(CApiTest, GroupedReducescatterScalesEveryMember) {
  const std::vector<CType> types = {{DataType::kFloat32, CHORUS_FLOAT32},
                                    {DataType::kInt16, CHORUS_INT16},
                                    {DataType::kFloat64, CHORUS_FLOAT64},
                                    {DataType::kUInt16, CHORUS_UINT16}};
  const std::vector<Shape> shapes = {{2 * size() + 1, 2}, {size() + 1}, {int64_t{1}, 3}, {3 * size(), 1}};
  for (const COp& op : {COp{ReduceOp::kSum, CHORUS_OP_SUM}, COp{ReduceOp::kAverage, CHORUS_OP_AVERAGE}}) {
    SCOPED_TRACE(chorus::reduce_op_name(op.op));
    std::vector<Buffer> mine;
    std::vector<std::vector<double>> expected;
    for (size_t m = 0; m < types.size(); ++m) {
      const auto inputs = make_inputs(types[m].dtype, shapes[m], size(), static_cast<int>(m), kSeed + 13);
      mine.push_back(inputs[rank()]);
      expected.push_back(reference_reducescatter(inputs, op.op, rank(), 0.5, 3.0));
    }
    std::vector<chorus_tensor_t> in;
    for (size_t m = 0; m < types.size(); ++m) in.push_back(c_tensor(mine[m], types[m].code));
    chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
    options.op = op.code;
    options.prescale_factor = 0.5;
    options.postscale_factor = 3.0;
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
    const std::string name = std::string("grouped.reducescatter.") + chorus::reduce_op_name(op.op);
    ASSERT_TRUE(ok(chorus_grouped_reducescatter_async(name.c_str(), static_cast<int>(in.size()), in.data(), &options,
                                                      &handle)));
    EXPECT_TRUE(done(handle));
    int count = -1;
    EXPECT_TRUE(ok(chorus_handle_output_count(handle, &count)));
    EXPECT_EQ(count, static_cast<int>(types.size()));
    for (size_t m = 0; m < types.size(); ++m) {
      SCOPED_TRACE("member " + std::to_string(m));
      Buffer part = member_output_of(handle, static_cast<int>(m), types[m].dtype, types[m].code);
      const auto [begin, end] = reducescatter_rows(shapes[m][0], size(), rank());
      Shape expected_shape = shapes[m];
      expected_shape[0] = end - begin;
      EXPECT_EQ(part.shape(), expected_shape);
      EXPECT_TRUE(matches(part.tensor(), expected[m]));
    }
    EXPECT_TRUE(ok(chorus_handle_release(handle)));
  }
}

// start/stop at run time: rank 0's trace holds exactly the collectives run
// in between, with cycle markers as asked; stopping again and an empty path
// get the C++ API's errors as codes.
TEST_F(CApiTest, TimelineStartedAndStoppedAtRunTime) {
  const std::string path = temp_dir() + "/" + shared_token() + ".c_api.timeline.json";
  auto allreduce_checked = [&](const char* name, int index) {
    const auto inputs = make_inputs(DataType::kFloat32, {5}, size(), index, kSeed + 14);
    Buffer mine = inputs[rank()];
    chorus_tensor_t t = c_tensor(mine, CHORUS_FLOAT32);
    chorus_options_t sum = CHORUS_OPTIONS_INITIALIZER;
    sum.op = CHORUS_OP_SUM;
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
    ASSERT_TRUE(ok(chorus_allreduce_async(name, &t, nullptr, &sum, &handle)));
    EXPECT_TRUE(done(handle));
    EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kSum))) << name;
    EXPECT_TRUE(ok(chorus_handle_release(handle)));
  };
  allreduce_checked("c.timeline.before", 0);
  ASSERT_TRUE(ok(chorus_start_timeline(path.c_str(), 1)));
  allreduce_checked("c.timeline.during", 1);
  std::vector<Buffer> group = {make_input(DataType::kInt16, {2, 2}, rank(), 2, kSeed + 14),
                               make_input(DataType::kFloat64, {1}, rank(), 3, kSeed + 14)};
  std::vector<chorus_tensor_t> in = {c_tensor(group[0], CHORUS_INT16), c_tensor(group[1], CHORUS_FLOAT64)};
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_grouped_allgather_async("c.timeline.group", 2, in.data(), nullptr, &handle)));
  EXPECT_TRUE(done(handle));
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
  ASSERT_TRUE(ok(chorus_stop_timeline()));
  allreduce_checked("c.timeline.after", 4);

  EXPECT_EQ(chorus_stop_timeline(), CHORUS_ERROR_PRECONDITION);
  EXPECT_STREQ(chorus_last_error(),
               "stop_timeline(): no timeline is being written; start one with start_timeline() or CHORUS_TIMELINE");
  EXPECT_EQ(chorus_start_timeline("", 0), CHORUS_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(chorus_last_error(),
               "start_timeline(): the path is empty; expected the file that rank 0 writes the trace to");

  test_barrier();
  if (rank() != 0) return;
  const std::string text = read_file(path);
  std::vector<double> markers;
  const Lanes lanes = parse_trace(text, &markers);
  std::set<std::string> names;
  for (const auto& [tensor, spans] : lanes) names.insert(tensor);
  EXPECT_EQ(names, (std::set<std::string>{"c.timeline.during", "c.timeline.group.0", "c.timeline.group.1"})) << text;
  EXPECT_EQ(activities(lanes, "c.timeline.during").count("ALLREDUCE"), 1u) << text;
  EXPECT_EQ(activities(lanes, "c.timeline.group.1").count("ALLGATHER"), 1u) << text;
  EXPECT_FALSE(markers.empty()) << "no CYCLE_START marker with mark_cycles:\n" << text;
  std::remove(path.c_str());
}

TEST_F(CApiTest, PointToPointAroundTheRing) {
  const int next = (rank() + 1) % size(), previous = (rank() + size() - 1) % size();
  Buffer sent = make_input(DataType::kFloat64, {4, 2}, rank(), 0, kSeed + 7);
  Buffer received(DataType::kFloat64, {4, 2});
  chorus_tensor_t out = c_tensor(sent, CHORUS_FLOAT64), in = c_tensor(received, CHORUS_FLOAT64);
  chorus_handle_t send = CHORUS_HANDLE_NULL, recv = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_recv_async("ring", &in, previous, &recv)));
  ASSERT_TRUE(ok(chorus_send_async("ring", &out, next, &send)));
  EXPECT_TRUE(done(send));
  EXPECT_TRUE(done(recv));
  EXPECT_TRUE(same_bytes(received.tensor(), make_input(DataType::kFloat64, {4, 2}, previous, 0, kSeed + 7)));
  EXPECT_TRUE(ok(chorus_handle_release(send)));
  EXPECT_TRUE(ok(chorus_handle_release(recv)));
}

TEST_F(CApiTest, ProcessSetAllreduceBroadcastAndBarrier) {
  // Ranks 1..size-1 (all but rank 0), given in descending order.
  std::vector<int> members;
  for (int r = size() - 1; r >= 1; --r) members.push_back(r);
  int32_t id = -1;
  ASSERT_TRUE(ok(chorus_add_process_set(members.data(), static_cast<int>(members.size()), &id)));
  EXPECT_GT(id, 0);
  int count = -1;
  ASSERT_TRUE(ok(chorus_process_set_ranks(id, nullptr, 0, &count)));
  std::vector<int> ranks(static_cast<size_t>(count));
  ASSERT_TRUE(ok(chorus_process_set_ranks(id, ranks.data(), count, &count)));
  std::vector<int> sorted(members.rbegin(), members.rend());
  EXPECT_EQ(ranks, sorted);
  int set_rank = -2, set_size = -1;
  ASSERT_TRUE(ok(chorus_process_set_rank(id, &set_rank)));
  ASSERT_TRUE(ok(chorus_process_set_size(id, &set_size)));
  EXPECT_EQ(set_rank, rank() - 1);  // -1 on rank 0, which is no member
  EXPECT_EQ(set_size, size() - 1);
  ASSERT_TRUE(ok(chorus_process_sets(nullptr, 0, &count)));
  std::vector<int32_t> ids(static_cast<size_t>(count));
  ASSERT_TRUE(ok(chorus_process_sets(ids.data(), count, &count)));
  EXPECT_EQ(ids, (std::vector<int32_t>{0, id}));

  if (set_rank >= 0) {
    std::vector<Buffer> all;
    for (int r = 1; r < size(); ++r) all.push_back(make_input(DataType::kFloat32, {6}, r, 0, kSeed + 8));
    Buffer mine = all[static_cast<size_t>(set_rank)];
    chorus_tensor_t t = c_tensor(mine, CHORUS_FLOAT32);
    chorus_options_t options = CHORUS_OPTIONS_INITIALIZER;
    options.process_set = id;  // the average over the set's size() - 1 ranks
    chorus_handle_t handle = CHORUS_HANDLE_NULL;
    ASSERT_TRUE(ok(chorus_allreduce_async("set.average", &t, nullptr, &options, &handle)));
    EXPECT_TRUE(done(handle));
    EXPECT_TRUE(matches(mine.tensor(), reference_reduce(all, ReduceOp::kAverage)));
    EXPECT_TRUE(ok(chorus_handle_release(handle)));

    // A broadcast's root is a rank of the job.
    Buffer b = make_input(DataType::kInt32, {3}, rank(), 1, kSeed + 8);
    chorus_options_t in_set = CHORUS_OPTIONS_INITIALIZER;
    in_set.process_set = id;
    t = c_tensor(b, CHORUS_INT32);
    ASSERT_TRUE(ok(chorus_broadcast_async("set.broadcast", &t, size() - 1, &in_set, &handle)));
    EXPECT_TRUE(done(handle));
    EXPECT_TRUE(same_bytes(b.tensor(), make_input(DataType::kInt32, {3}, size() - 1, 1, kSeed + 8)));
    EXPECT_TRUE(ok(chorus_handle_release(handle)));

    ASSERT_TRUE(ok(chorus_barrier_async(&in_set, &handle)));
    EXPECT_TRUE(done(handle));
    EXPECT_TRUE(ok(chorus_handle_release(handle)));
  }
  test_barrier();
  ASSERT_TRUE(ok(chorus_remove_process_set(id)));
  ASSERT_TRUE(ok(chorus_process_sets(nullptr, 0, &count)));
  EXPECT_EQ(count, 1);
}

TEST_F(CApiTest, BarrierAndJoinAgreeOnTheLastRank) {
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_barrier_async(nullptr, &handle)));
  EXPECT_TRUE(done(handle));
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
  // Nobody has data: the join completes with some rank as the last, the
  // same on every rank (which one depends on timing).
  ASSERT_TRUE(ok(chorus_join_async(&handle)));
  EXPECT_TRUE(done(handle));
  int last = -1;
  EXPECT_TRUE(ok(chorus_handle_last_joined_rank(handle, &last)));
  EXPECT_GE(last, 0);
  EXPECT_LT(last, size());
  const std::vector<int> everyone = exchange(last);
  for (int r = 0; r < size(); ++r) EXPECT_EQ(everyone[static_cast<size_t>(r)], last) << "rank " << r;
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
}

// A suite of its own: chorus_init() with static process sets (ids 1 and 2).
TEST(CApiInitTest, StaticProcessSetsFromInitOptions) {
  const int size = world_size();
  // Set 1: every rank; set 2: rank 0 alone.
  std::vector<int> sizes = {size, 1};
  std::vector<int> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(r);
  ranks.push_back(0);
  chorus_init_options_t options = CHORUS_INIT_OPTIONS_INITIALIZER;
  options.num_process_sets = 2;
  options.process_set_sizes = sizes.data();
  options.process_set_ranks = ranks.data();
  ASSERT_TRUE(ok(chorus_init(&options)));
  int count = -1;
  std::vector<int32_t> ids(3);
  EXPECT_TRUE(ok(chorus_process_sets(ids.data(), 3, &count)));
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 2}));
  int set_size = -1, set_rank = -2;
  EXPECT_TRUE(ok(chorus_process_set_size(2, &set_size)));
  EXPECT_TRUE(ok(chorus_process_set_rank(2, &set_rank)));
  EXPECT_EQ(set_size, 1);
  EXPECT_EQ(set_rank, world_rank() == 0 ? 0 : -1);

  // A sum over set 1 (everyone) of known values.
  const auto inputs = make_inputs(DataType::kInt64, {4}, size, 0, kSeed + 9);
  Buffer mine = inputs[world_rank()];
  chorus_tensor_t t = c_tensor(mine, CHORUS_INT64);
  chorus_options_t sum = CHORUS_OPTIONS_INITIALIZER;
  sum.op = CHORUS_OP_SUM;
  sum.process_set = 1;
  chorus_handle_t handle = CHORUS_HANDLE_NULL;
  ASSERT_TRUE(ok(chorus_allreduce_async("init.set", &t, nullptr, &sum, &handle)));
  EXPECT_TRUE(done(handle));
  EXPECT_TRUE(matches(mine.tensor(), reference_reduce(inputs, ReduceOp::kSum)));
  EXPECT_TRUE(ok(chorus_handle_release(handle)));
  test_barrier();
  EXPECT_TRUE(ok(chorus_shutdown()));
  EXPECT_EQ(chorus_is_initialized(), 0);
}

}  // namespace
}  // namespace chorus_test
