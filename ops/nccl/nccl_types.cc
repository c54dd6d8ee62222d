#include "ops/nccl/nccl_types.h"

#include <cmath>
#include <cstring>

#include "ops/kernels/half.h"

namespace chorus {
namespace {

bool valid(DataType dtype) { return static_cast<int>(dtype) < kNumDataTypes; }

Status invalid_dtype(const char* collective, DataType dtype) {
  return Status::InvalidArgument(std::string(collective) + ": invalid dtype " +
                                 std::to_string(static_cast<int>(dtype)) + " (not a chorus::DataType)");
}

// The dtype's value nearest to `factor` (16-bit ones rounded to nearest even).
double in_dtype(DataType dtype, double factor) {
  switch (dtype) {
    case DataType::kFloat16: return float16_to_float(float_to_float16(static_cast<float>(factor)));
    case DataType::kBFloat16: return bfloat16_to_float(float_to_bfloat16(static_cast<float>(factor)));
    case DataType::kFloat32: return static_cast<float>(factor);
    default: return factor;
  }
}

}  // namespace

Status nccl_data_type(const char* collective, DataType dtype, ncclDataType_t* out) {
  switch (dtype) {
    case DataType::kUInt8: *out = ncclUint8; return Status::OK();
    case DataType::kInt8: *out = ncclInt8; return Status::OK();
    case DataType::kInt32: *out = ncclInt32; return Status::OK();
    case DataType::kInt64: *out = ncclInt64; return Status::OK();
    case DataType::kFloat16: *out = ncclFloat16; return Status::OK();
    case DataType::kBFloat16: *out = ncclBfloat16; return Status::OK();
    case DataType::kFloat32: *out = ncclFloat32; return Status::OK();
    case DataType::kFloat64: *out = ncclFloat64; return Status::OK();
    case DataType::kBool: *out = ncclUint8; return Status::OK();  // moved as bytes, never reduced
    // Moved as any 2-byte type (NCCL moves bytes unchanged), never reduced.
    case DataType::kInt16:
    case DataType::kUInt16: *out = ncclFloat16; return Status::OK();
  }
  return invalid_dtype(collective, dtype);
}

Status nccl_reduction(const char* collective, DataType dtype, ReduceOp op, ncclDataType_t* type,
                      ncclRedOp_t* nccl_op) {
  if (!valid(dtype)) return invalid_dtype(collective, dtype);
  if (dtype == DataType::kBool) {
    return Status::InvalidArgument(std::string(collective) +
                                   ": dtype 'bool' cannot be reduced by the NCCL backend (NCCL has no boolean "
                                   "type; bool tensors can be allgathered, broadcast and alltoall'ed)");
  }
  const Status reducible = nccl_reducible(dtype);
  if (!reducible.ok()) return Status::InvalidArgument(std::string(collective) + ": " + reducible.message());
  switch (op) {
    case ReduceOp::kSum: *nccl_op = ncclSum; break;
    case ReduceOp::kMin: *nccl_op = ncclMin; break;
    case ReduceOp::kMax: *nccl_op = ncclMax; break;
    case ReduceOp::kProduct: *nccl_op = ncclProd; break;
    case ReduceOp::kAverage:
      return Status::InvalidArgument(std::string(collective) +
                                     ": reduce op 'average' is not supported by the NCCL backend; reduce with "
                                     "'sum' and a factor");
    default:
      return Status::InvalidArgument(std::string(collective) + ": invalid reduce op " +
                                     std::to_string(static_cast<int>(op)));
  }
  return nccl_data_type(collective, dtype, type);
}

Status nccl_reducible(DataType dtype) {
  if (dtype != DataType::kInt16 && dtype != DataType::kUInt16) return Status::OK();
  return Status::InvalidArgument(std::string("the NCCL backend cannot reduce ") + dtype_name(dtype) +
                                 " tensors (NCCL has no 16-bit integer type, and Horovod refuses them too); "
                                 "allgather, broadcast and alltoall move them, and CHORUS_GPU_BACKEND=staged "
                                 "reduces them through host memory");
}

Status check_factor(const char* collective, DataType dtype, double factor) {
  if (factor == 1.0) return Status::OK();
  if (!valid(dtype)) return invalid_dtype(collective, dtype);
  if (!is_floating_point(dtype)) {
    return Status::InvalidArgument(std::string(collective) + ": a " + dtype_name(dtype) +
                                   " result can only be scaled by 1, got " + std::to_string(factor));
  }
  if (!std::isfinite(factor)) {
    return Status::InvalidArgument(std::string(collective) + ": the factor must be finite, got " +
                                   std::to_string(factor));
  }
  return Status::OK();
}

bool scales_in_premul_sum(DataType dtype, ReduceOp op, double factor) {
  if (op != ReduceOp::kSum || factor == 1.0 || !is_floating_point(dtype)) return false;
  if (dtype == DataType::kFloat32 || dtype == DataType::kFloat64) return true;
  // 16-bit: only a factor the dtype holds exactly (and not a subnormal one,
  // which would flush the products of small inputs).
  const double exact = in_dtype(dtype, factor);
  const double smallest_normal = dtype == DataType::kFloat16 ? 0x1p-14 : 0x1p-126;
  return exact == factor && std::fabs(factor) >= smallest_normal;
}

void premul_sum_scalar(DataType dtype, double factor, uint64_t* storage) {
  *storage = 0;
  switch (dtype) {
    case DataType::kFloat16: {
      const uint16_t bits = float_to_float16(static_cast<float>(factor));
      std::memcpy(storage, &bits, sizeof(bits));
      break;
    }
    case DataType::kBFloat16: {
      const uint16_t bits = float_to_bfloat16(static_cast<float>(factor));
      std::memcpy(storage, &bits, sizeof(bits));
      break;
    }
    case DataType::kFloat32: {
      const float value = static_cast<float>(factor);
      std::memcpy(storage, &value, sizeof(value));
      break;
    }
    default:
      std::memcpy(storage, &factor, sizeof(factor));
      break;
  }
}

const char* nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

Status nccl_status(const std::string& what, ncclResult_t result, const char* last_error) {
  if (result == ncclSuccess) return Status::OK();
  std::string message = what + " failed: " + ncclGetErrorString(result) + " (" + nccl_result_name(result) + ")";
  if (last_error != nullptr && last_error[0] != '\0') message += ": " + std::string(last_error);
  if (result == ncclInvalidArgument || result == ncclInvalidUsage) return Status::InvalidArgument(message);
  return Status::Internal(message);
}

}  // namespace chorus
