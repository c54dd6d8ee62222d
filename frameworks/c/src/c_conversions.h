// From the C API's plain values to the C++ API's types: dtype and reduce-op
// codes, tensor descriptions, and the versioned options structs. Each
// refuses what it cannot convert with a CApiError naming the entry point,
// the argument and what was expected.
#pragma once

#include <string>
#include <vector>

#include "chorus/c_api.h"
#include "chorus/chorus.h"

namespace chorus::c_api {

// chorus_dtype_t <-> DataType. A reserved code that this build's DataType
// lacks is CHORUS_ERROR_UNSUPPORTED; any other unknown code
// CHORUS_ERROR_INVALID_ARGUMENT. `context` starts the message
// ("chorus_allreduce_async: 'grad': input").
DataType dtype_of(int code, const std::string& context);
int dtype_code(DataType dtype);

// A named argument: `name` non-null, as a string.
std::string name_of(const char* name, const char* function);

// The tensor `tensor` describes (non-null, shape readable); what the C++ API
// checks itself (negative sizes, a null buffer with elements, devices) is
// left to it, so both APIs give the same texts.
Tensor tensor_of(const chorus_tensor_t* tensor, const std::string& context);

// The fields of chorus_options_t, defaults where `options` is NULL.
struct Options {
  int op = CHORUS_OP_DEFAULT;
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  ProcessSet process_set;
};
Options options_of(const chorus_options_t* options, const char* function);
// `options.op`, or `fallback` for CHORUS_OP_DEFAULT.
ReduceOp reduce_op_of(const Options& options, ReduceOp fallback, const std::string& context);
// For collectives that reduce nothing: the op must be CHORUS_OP_DEFAULT and
// the factors 1.0.
void require_no_reduction(const Options& options, const std::string& context, const char* collective);

// The static process sets of chorus_init_options_t (none where NULL).
InitOptions init_options_of(const chorus_init_options_t* options);

}  // namespace chorus::c_api
