// Shared by the MpiBackend tests: an MpiBackend on MPI_COMM_WORLD with its
// MpiTypes, and the dtype and reduce-op lists they iterate over.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <memory>

#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

inline constexpr DataType kAllDtypes[] = {DataType::kUInt8,    DataType::kInt8,    DataType::kInt16,
                                          DataType::kUInt16,   DataType::kInt32,   DataType::kInt64,
                                          DataType::kFloat16,  DataType::kBFloat16, DataType::kFloat32,
                                          DataType::kFloat64,  DataType::kBool};
inline constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
inline bool reducible(DataType dtype) { return dtype != DataType::kBool; }

class MpiBackendFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    ASSERT_TRUE(types_.create().ok());
    backend_ = std::make_unique<MpiBackend>(MPI_COMM_WORLD, &types_);
  }
  void TearDown() override {
    backend_.reset();
    types_.destroy();
  }
  // A backend that splits or refuses counts above `limit` elements.
  std::unique_ptr<MpiBackend> limited(int64_t limit) {
    return std::make_unique<MpiBackend>(MPI_COMM_WORLD, &types_, limit);
  }

  int rank_ = 0;
  int size_ = 1;
  MpiTypes types_;
  std::unique_ptr<MpiBackend> backend_;
};

}  // namespace chorus
