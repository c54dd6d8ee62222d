// MpiBackend and MpiTypes without data: its own argument checks (count
// limits, integer factors, alltoallv's buffers; they must fail identically
// on every rank before any MPI call, so no rank is left waiting in a
// collective), missing MpiTypes::create(), MPI errors turned into
// Status::Internal, and the dtype/op tables. Its name, devices and the
// refusals every backend makes are the Backend contract's
// (backend_contract_test.cc); the collectives' results are there and in
// mpi_backend_test.cc.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"
#include "support/mpi_backend_fixture.h"

namespace chorus {
namespace {


class MpiBackendChecksTest : public MpiBackendFixture {
 protected:

};

// InvalidArgument whose message contains `needle`.
void expect_invalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

TEST_F(MpiBackendChecksTest, RejectsBadArgumentsBeforeCommunicating) {
  // Each case fails the same way on every rank, so no rank is left in MPI.
  const auto n = static_cast<size_t>(size_);
  std::vector<double> data(8 * n, 1.0);
  double* d = data.data();
  const std::vector<int64_t> ones(n, 1);
  const std::vector<int64_t> threes(n, 3);  // total 3 * np > 5
  const std::vector<int64_t> sixes(n, 6);
  auto five = limited(5);
  // Refusals every backend makes (kAverage, bool, a negative count, a
  // count per rank, a root among the ranks) are the Backend contract's:
  // backend_contract_test.cc. These are MPI's own.
  expect_invalid(five->reducescatter(d, d, threes, DataType::kFloat64, ReduceOp::kSum, 1.0)->wait(), "limit of 5");
  expect_invalid(backend_->allreduce(d, d, 2, DataType::kInt32, ReduceOp::kSum, 0.5)->wait(), "scaled by 1");
  expect_invalid(backend_->reducescatter(d, d, ones, DataType::kInt64, ReduceOp::kSum, 0.5)->wait(), "scaled by 1");
  expect_invalid(five->allgatherv(d, d, sixes, DataType::kFloat32)->wait(), "limit of 5");
  if (size_ >= 3) {  // counts within the limit, but rank 2's displacement (6) is not
    std::vector<int64_t> counts = ones;
    counts[0] = 5;
    expect_invalid(five->allgatherv(d, d, counts, DataType::kFloat32)->wait(), "displacement");
  }
  expect_invalid(five->alltoallv(d, sixes, d + 6, sixes, DataType::kInt32)->wait(), "limit of 5");
  expect_invalid(backend_->alltoallv(d, ones, d, ones, DataType::kInt32)->wait(), "different buffers");
  expect_invalid(backend_->alltoallv(d, {}, d + 6, ones, DataType::kInt32)->wait(), "one per rank");
  EXPECT_EQ(data[0], 1.0);
}


TEST_F(MpiBackendChecksTest, UncreatedTypesFailOnlyForUserDefinedOps) {
  MpiTypes fresh;
  MpiBackend backend(MPI_COMM_WORLD, &fresh);
  uint16_t half = 0;
  EXPECT_EQ(backend.allreduce(&half, &half, 1, DataType::kFloat16, ReduceOp::kSum, 1.0)->wait().code(),
            StatusCode::kPreconditionFailed);
  int8_t small = 1;  // int8 sums are user-defined ops as well
  EXPECT_EQ(backend.allreduce(&small, &small, 1, DataType::kInt8, ReduceOp::kSum, 1.0)->wait().code(),
            StatusCode::kPreconditionFailed);
  float value = static_cast<float>(rank_ + 1);
  ASSERT_TRUE(backend.allreduce(&value, &value, 1, DataType::kFloat32, ReduceOp::kSum, 1.0)->wait().ok());
  EXPECT_EQ(value, static_cast<float>(size_ * (size_ + 1) / 2));
}


TEST_F(MpiBackendChecksTest, MpiErrorsBecomeInternalStatuses) {
  // MPI_COMM_NULL makes the constructor's first MPI call fail; the error is
  // returned (not fatal) because MPI_COMM_WORLD now has MPI_ERRORS_RETURN.
  MpiBackend broken(MPI_COMM_NULL, &types_);
  const Status s = broken.barrier()->wait();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("MPI_Comm_set_errhandler failed: MPI_ERR_COMM"), std::string::npos) << s.message();
  EXPECT_EQ(broken.allreduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 1.0)->wait().code(),
            StatusCode::kInternal);
}


TEST(MpiTypesTest, MapsEveryDtypeAndOp) {
  MpiTypes types;
  EXPECT_EQ(types.datatype(DataType::kFloat16), MPI_DATATYPE_NULL);
  ASSERT_TRUE(types.create().ok());
  ASSERT_TRUE(types.create().ok());  // a second create is a no-op
  for (DataType dtype : kAllDtypes) {
    int bytes = 0;
    ASSERT_EQ(MPI_Type_size(types.datatype(dtype), &bytes), MPI_SUCCESS);
    EXPECT_EQ(static_cast<size_t>(bytes), dtype_size(dtype)) << dtype_name(dtype);
    for (ReduceOp op : kOps) EXPECT_EQ(types.op(dtype, op) == MPI_OP_NULL, !reducible(dtype));
    EXPECT_EQ(types.op(dtype, ReduceOp::kAverage), MPI_OP_NULL);
  }
  EXPECT_NE(types.op(DataType::kFloat16, ReduceOp::kSum), types.op(DataType::kBFloat16, ReduceOp::kSum));
  types.destroy();
  types.destroy();
  EXPECT_EQ(types.op(DataType::kBFloat16, ReduceOp::kMax), MPI_OP_NULL);
}

}  // namespace
}  // namespace chorus
