// Chorus's vocabulary in NCCL's terms: DataType -> ncclDataType_t,
// ReduceOp -> ncclRedOp_t, the scalar of a PreMulSum, and ncclResult_t ->
// Status. Pure functions (no communicator, no GPU), so they are unit-tested
// on machines without one.
//
// Every Chorus dtype has an NCCL type that moves it. bool (one byte, 0 or 1)
// travels as ncclUint8 in the collectives that only move data (allgather,
// broadcast, alltoall); a reduction of bool is refused, because NCCL would
// add, multiply or compare bytes and a sum of trues is not a bool. int16 and
// uint16 travel as ncclFloat16 (NCCL moves the bytes of allgather, broadcast
// and send/recv unchanged, whatever the type); NCCL has no 16-bit integer
// type to reduce them with, so their reductions are refused, as Horovod's
// NCCL operations refuse them (GetNCCLDataType: "not supported in NCCL
// mode"), at submission (NcclBackend::check_reduction).
#pragma once

#include <nccl.h>

#include <cstdint>
#include <string>

#include "chorus/status.h"
#include "chorus/types.h"

namespace chorus {

// The NCCL type that moves `dtype` unchanged. InvalidArgument, naming
// `collective`, for a value that is not a DataType.
Status nccl_data_type(const char* collective, DataType dtype, ncclDataType_t* out);

// The NCCL type and built-in op of a reduction: kSum, kMin, kMax, kProduct
// on every dtype but bool. kAverage is refused (the executor turns it into
// kSum and a factor, which allreduce() and reducescatter() take).
Status nccl_reduction(const char* collective, DataType dtype, ReduceOp op, ncclDataType_t* type,
                      ncclRedOp_t* nccl_op);

// OK when NCCL can reduce `dtype` (bool aside, which nothing reduces);
// otherwise why not (int16, uint16), an InvalidArgument whose text
// completes "'<tensor>': ".
Status nccl_reducible(DataType dtype);

// A result can be multiplied by `factor` only when it is floating-point,
// and only by a finite factor; integer results only by 1.
Status check_factor(const char* collective, DataType dtype, double factor);

// Whether a sum scaled by `factor` goes through NCCL's PreMulSum (each rank's
// input multiplied by the factor as NCCL reads it, in one pass) rather than
// a sum followed by CudaDevice::scale (a second pass over the result).
// NCCL multiplies in the dtype itself, with the factor stored in the dtype:
// exact for float32 and float64 the way the CPU path's factor is (a float32
// factor for float32), but a float16 factor has 11 significant bits and a
// bfloat16 one 8, so 1/3 would become 0.33398 in bfloat16 (0.2% too large,
// on every element). 16-bit sums therefore take PreMulSum only when the
// factor is exact in the dtype (a power of two: 1/2, 1/4, ... of a
// power-of-two world size), and a scale pass, computed in float32 and
// rounded once, otherwise.
bool scales_in_premul_sum(DataType dtype, ReduceOp op, double factor);

// The factor as PreMulSum's host scalar: its bytes in `dtype` (float16 and
// bfloat16 rounded to nearest even), in the low bytes of `*storage`.
void premul_sum_scalar(DataType dtype, double factor, uint64_t* storage);

// OK for ncclSuccess; otherwise Internal("<what> failed: <NCCL's string for
// result> (<enum name>)[: <last_error>]"), InvalidArgument for
// ncclInvalidArgument and ncclInvalidUsage. `last_error` is
// ncclGetLastError()'s text (may be null or empty).
Status nccl_status(const std::string& what, ncclResult_t result, const char* last_error = nullptr);

// "ncclSuccess", "ncclRemoteError", ...
const char* nccl_result_name(ncclResult_t result);

}  // namespace chorus
