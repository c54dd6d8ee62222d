// The NCCL backend's GPU-free parts: DataType/ReduceOp -> NCCL's types and
// ops, the factor rules (which sums scale inside PreMulSum and the scalar
// they pass), ncclResult_t -> Status, and seconds_text. Built with
// CHORUS_WITH_NCCL; needs no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "ops/nccl/nccl_communicator.h"
#include "ops/nccl/nccl_types.h"

namespace chorus {
namespace {

using ::testing::HasSubstr;

constexpr DataType kNumeric[] = {DataType::kUInt8,   DataType::kInt8,     DataType::kInt32,
                                 DataType::kInt64,   DataType::kFloat16,  DataType::kBFloat16,
                                 DataType::kFloat32, DataType::kFloat64};

TEST(NcclTypesTest, MovesEveryDtypeAsItsNcclType) {
  const std::pair<DataType, ncclDataType_t> expected[] = {
      {DataType::kUInt8, ncclUint8},     {DataType::kInt8, ncclInt8},         {DataType::kInt32, ncclInt32},
      {DataType::kInt64, ncclInt64},     {DataType::kFloat16, ncclFloat16},   {DataType::kBFloat16, ncclBfloat16},
      {DataType::kFloat32, ncclFloat32}, {DataType::kFloat64, ncclFloat64},   {DataType::kBool, ncclUint8},
      // 2-byte carriers: NCCL moves any type's bytes unchanged.
      {DataType::kInt16, ncclFloat16},   {DataType::kUInt16, ncclFloat16}};
  for (const auto& [dtype, type] : expected) {
    ncclDataType_t got = ncclNumTypes;
    ASSERT_TRUE(nccl_data_type("allgatherv", dtype, &got).ok()) << dtype_name(dtype);
    EXPECT_EQ(got, type) << dtype_name(dtype);
  }
}

TEST(NcclTypesTest, RefusesAValueThatIsNoDtype) {
  ncclDataType_t type;
  ncclRedOp_t op;
  const auto bogus = static_cast<DataType>(42);
  const Status moved = nccl_data_type("broadcast", bogus, &type);
  EXPECT_EQ(moved.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(moved.message(), HasSubstr("broadcast: invalid dtype 42"));
  const Status reduced = nccl_reduction("allreduce", bogus, ReduceOp::kSum, &type, &op);
  EXPECT_EQ(reduced.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(reduced.message(), HasSubstr("allreduce: invalid dtype 42"));
}

TEST(NcclTypesTest, ReducesEveryNumericDtypeWithEveryOp) {
  const std::pair<ReduceOp, ncclRedOp_t> ops[] = {
      {ReduceOp::kSum, ncclSum}, {ReduceOp::kMin, ncclMin}, {ReduceOp::kMax, ncclMax}, {ReduceOp::kProduct, ncclProd}};
  for (DataType dtype : kNumeric) {
    for (const auto& [op, nccl_op] : ops) {
      ncclDataType_t type = ncclNumTypes;
      ncclRedOp_t got = ncclNumOps;
      ASSERT_TRUE(nccl_reduction("allreduce", dtype, op, &type, &got).ok()) << dtype_name(dtype);
      EXPECT_EQ(got, nccl_op) << dtype_name(dtype) << " " << reduce_op_name(op);
      ncclDataType_t moved = ncclNumTypes;
      ASSERT_TRUE(nccl_data_type("allreduce", dtype, &moved).ok());
      EXPECT_EQ(type, moved) << dtype_name(dtype);
    }
  }
}

TEST(NcclTypesTest, RefusesToReduceBoolAndToAverage) {
  ncclDataType_t type;
  ncclRedOp_t op;
  const Status boolean = nccl_reduction("reducescatter", DataType::kBool, ReduceOp::kMax, &type, &op);
  EXPECT_EQ(boolean.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(boolean.message(), HasSubstr("reducescatter: dtype 'bool' cannot be reduced by the NCCL backend"));
  const Status average = nccl_reduction("allreduce", DataType::kFloat32, ReduceOp::kAverage, &type, &op);
  EXPECT_EQ(average.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(average.message(), HasSubstr("reduce op 'average' is not supported by the NCCL backend"));
  const Status bogus = nccl_reduction("allreduce", DataType::kFloat32, static_cast<ReduceOp>(9), &type, &op);
  EXPECT_THAT(bogus.message(), HasSubstr("invalid reduce op 9"));
}

// NCCL has no 16-bit integer type, and Horovod refuses int16 in NCCL mode:
// their reductions are refused, at submission (the API asks
// Backend::check_reduction) and by the backend itself.
TEST(NcclTypesTest, RefusesToReduce16BitIntegersNamingTheWayAround) {
  for (DataType dtype : {DataType::kInt16, DataType::kUInt16}) {
    ncclDataType_t type;
    ncclRedOp_t op;
    const Status reduced = nccl_reduction("allreduce", dtype, ReduceOp::kSum, &type, &op);
    EXPECT_EQ(reduced.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(reduced.message(), HasSubstr(std::string("allreduce: the NCCL backend cannot reduce ") +
                                             dtype_name(dtype) + " tensors (NCCL has no 16-bit integer type"));
    const Status early = nccl_reducible(dtype);
    EXPECT_EQ(early.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(early.message(), HasSubstr("CHORUS_GPU_BACKEND=staged reduces them through host memory"));
  }
  for (DataType dtype : kNumeric) EXPECT_TRUE(nccl_reducible(dtype).ok()) << dtype_name(dtype);
}

TEST(NcclTypesTest, ScalesOnlyFloatingResultsByFiniteFactors) {
  EXPECT_TRUE(check_factor("allreduce", DataType::kInt32, 1.0).ok());
  EXPECT_TRUE(check_factor("allreduce", DataType::kBFloat16, 0.25).ok());
  const Status integer = check_factor("allreduce", DataType::kInt64, 0.5);
  EXPECT_EQ(integer.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(integer.message(), HasSubstr("a int64 result can only be scaled by 1, got 0.5"));
  const Status infinite = check_factor("reducescatter", DataType::kFloat32, std::numeric_limits<double>::infinity());
  EXPECT_EQ(infinite.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(infinite.message(), HasSubstr("reducescatter: the factor must be finite"));
}

TEST(NcclTypesTest, PreMulSumWhereTheFactorIsExactInTheDtype) {
  // float32 and float64 hold any average's factor as the CPU path does.
  EXPECT_TRUE(scales_in_premul_sum(DataType::kFloat32, ReduceOp::kSum, 1.0 / 3));
  EXPECT_TRUE(scales_in_premul_sum(DataType::kFloat64, ReduceOp::kSum, 0.1));
  // 16-bit: powers of two only (1/3 would be rounded to 11 or 8 bits).
  EXPECT_TRUE(scales_in_premul_sum(DataType::kFloat16, ReduceOp::kSum, 0.25));
  EXPECT_TRUE(scales_in_premul_sum(DataType::kBFloat16, ReduceOp::kSum, 0.5));
  EXPECT_TRUE(scales_in_premul_sum(DataType::kFloat16, ReduceOp::kSum, 3.0));
  EXPECT_FALSE(scales_in_premul_sum(DataType::kFloat16, ReduceOp::kSum, 1.0 / 3));
  EXPECT_FALSE(scales_in_premul_sum(DataType::kBFloat16, ReduceOp::kSum, 1.0 / 3));
  EXPECT_FALSE(scales_in_premul_sum(DataType::kBFloat16, ReduceOp::kSum, 1.0 + 0x1p-9));
  // A subnormal float16 factor would flush small products to zero.
  EXPECT_FALSE(scales_in_premul_sum(DataType::kFloat16, ReduceOp::kSum, 0x1p-20));
  EXPECT_TRUE(scales_in_premul_sum(DataType::kBFloat16, ReduceOp::kSum, 0x1p-20));
  // No factor, another op, or an integer: nothing to pre-multiply.
  EXPECT_FALSE(scales_in_premul_sum(DataType::kFloat32, ReduceOp::kSum, 1.0));
  EXPECT_FALSE(scales_in_premul_sum(DataType::kFloat32, ReduceOp::kMax, 0.5));
  EXPECT_FALSE(scales_in_premul_sum(DataType::kFloat32, ReduceOp::kProduct, 0.5));
  EXPECT_FALSE(scales_in_premul_sum(DataType::kInt32, ReduceOp::kSum, 0.5));
}

template <typename T>
T low_bytes(uint64_t storage) {
  T value;
  std::memcpy(&value, &storage, sizeof(T));
  return value;
}

TEST(NcclTypesTest, PreMulSumScalarIsTheFactorInTheDtype) {
  uint64_t storage = ~0ull;
  premul_sum_scalar(DataType::kFloat16, 0.25, &storage);
  EXPECT_EQ(storage, 0x3400u);  // 2^-2 in binary16, upper bytes cleared
  premul_sum_scalar(DataType::kBFloat16, 0.5, &storage);
  EXPECT_EQ(storage, 0x3f00u);
  premul_sum_scalar(DataType::kFloat32, 1.0 / 3, &storage);
  EXPECT_EQ(low_bytes<float>(storage), static_cast<float>(1.0 / 3));
  EXPECT_EQ(storage >> 32, 0u);
  premul_sum_scalar(DataType::kFloat64, 0.1, &storage);
  EXPECT_EQ(low_bytes<double>(storage), 0.1);
}

TEST(NcclTypesTest, ResultsBecomeStatuses) {
  EXPECT_TRUE(nccl_status("ncclAllReduce", ncclSuccess).ok());
  const Status remote = nccl_status("ncclAllReduce", ncclRemoteError, "peer 3 closed the connection");
  EXPECT_EQ(remote.code(), StatusCode::kInternal);
  EXPECT_THAT(remote.message(), HasSubstr("ncclAllReduce failed: "));
  EXPECT_THAT(remote.message(), HasSubstr("(ncclRemoteError): peer 3 closed the connection"));
  const Status usage = nccl_status("ncclCommInitRankConfig", ncclInvalidUsage, "");
  EXPECT_EQ(usage.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(usage.message(), ::testing::EndsWith("(ncclInvalidUsage)"));
  EXPECT_STREQ(nccl_result_name(ncclInProgress), "ncclInProgress");
  EXPECT_STREQ(nccl_result_name(static_cast<ncclResult_t>(99)), "unknown ncclResult_t");
}

TEST(NcclWaitingTest, QuotesSeconds) {
  EXPECT_EQ(seconds_text(std::chrono::seconds(300)), "300 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(250)), "0.25 s");
  EXPECT_EQ(seconds_text(std::chrono::milliseconds(1500)), "1.5 s");
}

}  // namespace
}  // namespace chorus
