// Element-wise reductions: one small template per (element type, op), picked
// by a switch on the runtime dtype and op.
#include "ops/kernels/reduce.h"

#include <cstdint>
#include <string>

#include "ops/kernels/half.h"
#include "ops/kernels/reduce_ops.h"

namespace chorus {
namespace {

using kernels::MaxOp;
using kernels::MinOp;
using kernels::ProductOp;
using kernels::SumOp;

// GCC 12 at -O2 only vectorises a loop when no scalar remainder is needed
// (its "very cheap" cost model), so the bulk runs in blocks of a constant
// length and only the last partial block runs element by element.
// `__restrict` saves the compiler a runtime overlap check it may not emit;
// callers (MPI user ops, the executor) always pass distinct buffers.
constexpr int64_t kBlock = 64;

template <typename T, typename Op>
void reduce_typed(T* __restrict inout, const T* __restrict in, int64_t count, Op op) {
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) inout[i + j] = op(inout[i + j], in[i + j]);
  }
  for (; i < count; ++i) inout[i] = op(inout[i], in[i]);
}

// float16/bfloat16: widen both operands, reduce in float32, round once.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), typename Op>
void reduce_half(uint16_t* __restrict inout, const uint16_t* __restrict in, int64_t count, Op op) {
  for (int64_t i = 0; i < count; ++i) inout[i] = FromFloat(op(ToFloat(inout[i]), ToFloat(in[i])));
}

template <typename T>
void reduce_as(void* inout, const void* in, int64_t count, ReduceOp op) {
  auto* a = static_cast<T*>(inout);
  const auto* b = static_cast<const T*>(in);
  switch (op) {
    case ReduceOp::kSum: reduce_typed(a, b, count, SumOp{}); break;
    case ReduceOp::kMin: reduce_typed(a, b, count, MinOp{}); break;
    case ReduceOp::kMax: reduce_typed(a, b, count, MaxOp{}); break;
    case ReduceOp::kProduct: reduce_typed(a, b, count, ProductOp{}); break;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;  // rejected by reduce_into
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce_half_as(void* inout, const void* in, int64_t count, ReduceOp op) {
  auto* a = static_cast<uint16_t*>(inout);
  const auto* b = static_cast<const uint16_t*>(in);
  switch (op) {
    case ReduceOp::kSum: reduce_half<ToFloat, FromFloat>(a, b, count, SumOp{}); break;
    case ReduceOp::kMin: reduce_half<ToFloat, FromFloat>(a, b, count, MinOp{}); break;
    case ReduceOp::kMax: reduce_half<ToFloat, FromFloat>(a, b, count, MaxOp{}); break;
    case ReduceOp::kProduct: reduce_half<ToFloat, FromFloat>(a, b, count, ProductOp{}); break;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;  // rejected by reduce_into
  }
}

Status check_arguments(const void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op) {
  if (op == ReduceOp::kAverage) {
    return Status::InvalidArgument(
        "reduce_into: reduce op 'average' is not element-wise; reduce with 'sum' and divide afterwards");
  }
  if (op == ReduceOp::kAdasum) {
    return Status::InvalidArgument(
        "reduce_into: reduce op 'adasum' is not element-wise; it runs as its own algorithm (ops/mpi/adasum.h)");
  }
  if (op != ReduceOp::kSum && op != ReduceOp::kMin && op != ReduceOp::kMax && op != ReduceOp::kProduct) {
    return Status::InvalidArgument("reduce_into: invalid reduce op " +
                                   std::to_string(static_cast<int>(op)));
  }
  if (dtype == DataType::kBool) {
    return Status::InvalidArgument(
        "reduce_into: dtype 'bool' cannot be reduced (bool tensors support broadcast and allgather only)");
  }
  if (static_cast<int>(dtype) >= kNumDataTypes) {
    return Status::InvalidArgument("reduce_into: invalid dtype " + std::to_string(static_cast<int>(dtype)));
  }
  if (count < 0) {
    return Status::InvalidArgument("reduce_into: count must not be negative, got " + std::to_string(count));
  }
  if (count > 0 && (inout == nullptr || in == nullptr)) {
    return Status::InvalidArgument("reduce_into: null buffer with count " + std::to_string(count));
  }
  return Status::OK();
}

}  // namespace

Status reduce_into(void* inout, const void* in, int64_t count, DataType dtype, ReduceOp op) {
  CHORUS_RETURN_IF_ERROR(check_arguments(inout, in, count, dtype, op));
  switch (dtype) {
    case DataType::kUInt8: reduce_as<uint8_t>(inout, in, count, op); break;
    case DataType::kInt8: reduce_as<int8_t>(inout, in, count, op); break;
    case DataType::kInt16: reduce_as<int16_t>(inout, in, count, op); break;
    case DataType::kUInt16: reduce_as<uint16_t>(inout, in, count, op); break;
    case DataType::kInt32: reduce_as<int32_t>(inout, in, count, op); break;
    case DataType::kInt64: reduce_as<int64_t>(inout, in, count, op); break;
    case DataType::kFloat32: reduce_as<float>(inout, in, count, op); break;
    case DataType::kFloat64: reduce_as<double>(inout, in, count, op); break;
    case DataType::kFloat16: reduce_half_as<float16_to_float, float_to_float16>(inout, in, count, op); break;
    case DataType::kBFloat16: reduce_half_as<bfloat16_to_float, float_to_bfloat16>(inout, in, count, op); break;
    case DataType::kBool: break;  // rejected by check_arguments
  }
  return Status::OK();
}

}  // namespace chorus
