#include "ops/mpi/mpi_datatypes.h"

#include <cstdint>
#include <string>

#include "ops/kernels/reduce.h"

namespace chorus {
namespace {

// The MPI user function for one (dtype, op) pair. MPI passes no context, so
// the pair is baked in at compile time. reduce_into cannot fail for these
// constant, valid arguments (MPI never passes a negative length), and a user
// function has no way to report an error anyway.
template <DataType kDtype, ReduceOp kOp>
void kernel_reduce(void* in, void* inout, int* len, MPI_Datatype* /*datatype*/) {
  (void)reduce_into(inout, in, *len, kDtype, kOp);
}

struct UserOp {
  DataType dtype;
  ReduceOp op;
  MPI_User_function* function;
};

template <DataType kDtype, ReduceOp kOp>
constexpr UserOp user_op() {
  return {kDtype, kOp, kernel_reduce<kDtype, kOp>};
}

constexpr UserOp kUserOps[] = {
    user_op<DataType::kFloat16, ReduceOp::kSum>(),  user_op<DataType::kFloat16, ReduceOp::kMin>(),
    user_op<DataType::kFloat16, ReduceOp::kMax>(),  user_op<DataType::kFloat16, ReduceOp::kProduct>(),
    user_op<DataType::kBFloat16, ReduceOp::kSum>(), user_op<DataType::kBFloat16, ReduceOp::kMin>(),
    user_op<DataType::kBFloat16, ReduceOp::kMax>(), user_op<DataType::kBFloat16, ReduceOp::kProduct>(),
    user_op<DataType::kInt8, ReduceOp::kSum>(),     user_op<DataType::kUInt8, ReduceOp::kSum>(),
    user_op<DataType::kInt16, ReduceOp::kSum>(),    user_op<DataType::kUInt16, ReduceOp::kSum>(),
};
static_assert(sizeof(kUserOps) / sizeof(kUserOps[0]) == MpiTypes::kNumUserOps, "one MPI_Op per entry");

// kUserOps' index for each (dtype, op), -1 where MPI's own op serves: op()
// runs for every tensor, and scanning the list cost more than the rest of it.
constexpr int kNumReduceOps = static_cast<int>(ReduceOp::kAdasum) + 1;
struct UserOpIndex {
  int8_t at[kNumDataTypes][kNumReduceOps];
};
constexpr UserOpIndex make_user_op_index() {
  UserOpIndex index{};
  for (auto& row : index.at) {
    for (int8_t& i : row) i = -1;
  }
  for (int i = 0; i < MpiTypes::kNumUserOps; ++i) {
    index.at[static_cast<int>(kUserOps[i].dtype)][static_cast<int>(kUserOps[i].op)] = static_cast<int8_t>(i);
  }
  return index;
}
constexpr UserOpIndex kUserOpIndex = make_user_op_index();

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

}  // namespace

Status mpi_status(const char* call, int rc) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) {
    return Status::Internal(std::string(call) + " failed: MPI error code " + std::to_string(rc));
  }
  return Status::Internal(std::string(call) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

MpiTypes::~MpiTypes() { destroy(); }

Status MpiTypes::create() {
  if (created_) return Status::OK();
  // Any half-made state from here on is released by destroy(), which skips
  // the handles that are still null.
  Status status = mpi_status("MPI_Type_contiguous", MPI_Type_contiguous(2, MPI_BYTE, &half_type_));
  if (status.ok()) status = mpi_status("MPI_Type_commit", MPI_Type_commit(&half_type_));
  for (int i = 0; i < kNumUserOps && status.ok(); ++i) {
    status = mpi_status("MPI_Op_create", MPI_Op_create(kUserOps[i].function, /*commute=*/1, &user_ops_[i]));
  }
  created_ = true;  // so destroy() frees a partial set too
  if (!status.ok()) destroy();
  return status;
}

void MpiTypes::destroy() {
  if (!created_) return;
  created_ = false;
  // After MPI_Finalize the handles are gone and any MPI call is erroneous.
  const bool release = !mpi_finalized();
  for (MPI_Op& op : user_ops_) {
    if (release && op != MPI_OP_NULL) MPI_Op_free(&op);
    op = MPI_OP_NULL;
  }
  if (release && half_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_type_);
  half_type_ = MPI_DATATYPE_NULL;
}

MPI_Datatype MpiTypes::datatype(DataType dtype) const {
  switch (dtype) {
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kUInt16: return MPI_UINT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return half_type_;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    // C++ bool is one byte on every platform we build for, like C's _Bool.
    case DataType::kBool: return MPI_C_BOOL;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op MpiTypes::op(DataType dtype, ReduceOp op) const {
  const int d = static_cast<int>(dtype);
  const int o = static_cast<int>(op);
  if (d < kNumDataTypes && o < kNumReduceOps && kUserOpIndex.at[d][o] >= 0) return user_ops_[kUserOpIndex.at[d][o]];
  // Half dtypes have user-defined ops only.
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) return MPI_OP_NULL;
  if (dtype == DataType::kBool || static_cast<int>(dtype) >= kNumDataTypes) return MPI_OP_NULL;
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;
  }
  return MPI_OP_NULL;
}

}  // namespace chorus
