#include "c_conversions.h"

#include <cstddef>
#include <utility>

#include "c_errors.h"

namespace chorus::c_api {
namespace {

CApiError invalid(const std::string& text) { return CApiError(CHORUS_ERROR_INVALID_ARGUMENT, text); }

// The part of each options struct that version 1 of the API defined: a
// struct from a program built against version 1 is at least this long.
constexpr size_t kOptionsV1Size = offsetof(chorus_options_t, process_set) + sizeof(int32_t);
constexpr size_t kInitOptionsV1Size =
    offsetof(chorus_init_options_t, process_set_ranks) + sizeof(const int*);

std::string hex(unsigned int value) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), digits[value % 16]);
    value /= 16;
  } while (value != 0);
  return "0x" + out;
}

// The header of a versioned options struct: initialised by its macro, and
// long enough for the fields this library reads.
void check_header(size_t size, unsigned int magic, unsigned int version, size_t v1_size,
                  const std::string& function, const char* type, const char* initializer) {
  if (magic != CHORUS_OPTIONS_MAGIC) {
    throw invalid(function + ": the " + type + " was not set up with " + initializer + " (its magic is " +
                  hex(magic) + ", expected " + hex(CHORUS_OPTIONS_MAGIC) + ")");
  }
  if (size < v1_size || version < 1) {
    throw invalid(function + ": the " + type + " has size " + std::to_string(size) + " and version " +
                  std::to_string(version) + "; expected at least size " + std::to_string(v1_size) +
                  " and version 1 (set them with " + initializer + ")");
  }
}

}  // namespace

DataType dtype_of(int code, const std::string& context) {
  switch (code) {
    case CHORUS_UINT8: return DataType::kUInt8;
    case CHORUS_INT8: return DataType::kInt8;
    case CHORUS_INT32: return DataType::kInt32;
    case CHORUS_INT64: return DataType::kInt64;
    case CHORUS_FLOAT16: return DataType::kFloat16;
    case CHORUS_BFLOAT16: return DataType::kBFloat16;
    case CHORUS_FLOAT32: return DataType::kFloat32;
    case CHORUS_FLOAT64: return DataType::kFloat64;
    case CHORUS_BOOL: return DataType::kBool;
    case CHORUS_INT16: return DataType::kInt16;
    case CHORUS_UINT16: return DataType::kUInt16;
    default:
      throw invalid(context + " has unknown dtype code " + std::to_string(code) +
                    "; expected one of CHORUS_UINT8 (0), CHORUS_INT8 (1), CHORUS_INT32 (2), CHORUS_INT64 (3), "
                    "CHORUS_FLOAT16 (4), CHORUS_BFLOAT16 (5), CHORUS_FLOAT32 (6), CHORUS_FLOAT64 (7), "
                    "CHORUS_BOOL (8), CHORUS_INT16 (9), CHORUS_UINT16 (10)");
  }
}

int dtype_code(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return CHORUS_UINT8;
    case DataType::kInt8: return CHORUS_INT8;
    case DataType::kInt32: return CHORUS_INT32;
    case DataType::kInt64: return CHORUS_INT64;
    case DataType::kFloat16: return CHORUS_FLOAT16;
    case DataType::kBFloat16: return CHORUS_BFLOAT16;
    case DataType::kFloat32: return CHORUS_FLOAT32;
    case DataType::kFloat64: return CHORUS_FLOAT64;
    case DataType::kBool: return CHORUS_BOOL;
    case DataType::kInt16: return CHORUS_INT16;
    case DataType::kUInt16: return CHORUS_UINT16;
  }
  // Outputs have their input's dtype, which came through dtype_of().
  throw CApiError(CHORUS_ERROR_INTERNAL, std::string("dtype ") + dtype_name(dtype) + " has no C API code");
}

std::string name_of(const char* name, const char* function) {
  require_pointer(name, function, "name");
  return name;
}

Tensor tensor_of(const chorus_tensor_t* tensor, const std::string& context) {
  if (tensor == nullptr) throw invalid(context + " is NULL");
  const DataType dtype = dtype_of(tensor->dtype, context);
  if (tensor->ndim < 0) {
    throw invalid(context + " has ndim " + std::to_string(tensor->ndim) + "; expected 0 or more");
  }
  if (tensor->ndim > 0 && tensor->shape == nullptr) {
    throw invalid(context + " has ndim " + std::to_string(tensor->ndim) + " but its shape is NULL");
  }
  Shape shape(tensor->shape, tensor->shape + tensor->ndim);
  Device device;
  switch (tensor->device_type) {
    case CHORUS_DEVICE_CPU:
      if (tensor->device_index != 0) {
        throw invalid(context + " is on CHORUS_DEVICE_CPU with device_index " +
                      std::to_string(tensor->device_index) + "; expected 0");
      }
      device = Device::cpu();
      break;
    case CHORUS_DEVICE_CUDA:
      if (tensor->device_index < 0) {
        throw invalid(context + " has device_index " + std::to_string(tensor->device_index) +
                      "; expected a CUDA device index >= 0");
      }
      device = Device::cuda(tensor->device_index);
      break;
    default:
      throw invalid(context + " has unknown device_type " + std::to_string(tensor->device_type) +
                    "; expected CHORUS_DEVICE_CPU (0) or CHORUS_DEVICE_CUDA (1)");
  }
  return Tensor(tensor->data, dtype, std::move(shape), device);
}

Options options_of(const chorus_options_t* options, const char* function) {
  Options out;
  if (options == nullptr) return out;
  check_header(options->size, options->magic, options->version, kOptionsV1Size, function, "chorus_options_t",
               "CHORUS_OPTIONS_INITIALIZER");
  out.op = options->op;
  out.prescale_factor = options->prescale_factor;
  out.postscale_factor = options->postscale_factor;
  out.process_set = ProcessSet{options->process_set};
  return out;
}

ReduceOp reduce_op_of(const Options& options, ReduceOp fallback, const std::string& context) {
  switch (options.op) {
    case CHORUS_OP_DEFAULT: return fallback;
    case CHORUS_OP_SUM: return ReduceOp::kSum;
    case CHORUS_OP_AVERAGE: return ReduceOp::kAverage;
    case CHORUS_OP_MIN: return ReduceOp::kMin;
    case CHORUS_OP_MAX: return ReduceOp::kMax;
    case CHORUS_OP_PRODUCT: return ReduceOp::kProduct;
    case CHORUS_OP_ADASUM: return ReduceOp::kAdasum;
    default:
      throw invalid(context + ": unknown reduce op code " + std::to_string(options.op) +
                    "; expected CHORUS_OP_DEFAULT (-1), CHORUS_OP_SUM (0), CHORUS_OP_AVERAGE (1), "
                    "CHORUS_OP_MIN (2), CHORUS_OP_MAX (3), CHORUS_OP_PRODUCT (4) or CHORUS_OP_ADASUM (5)");
  }
}

void require_no_reduction(const Options& options, const std::string& context, const char* collective) {
  if (options.op != CHORUS_OP_DEFAULT) {
    throw invalid(context + ": " + collective + " takes no reduce op (options->op is " + std::to_string(options.op) +
                  "); expected CHORUS_OP_DEFAULT (-1)");
  }
  for (const auto& [field, factor] : {std::pair<const char*, double>{"prescale_factor", options.prescale_factor},
                                      {"postscale_factor", options.postscale_factor}}) {
    if (factor != 1.0) {
      throw invalid(context + ": " + collective + " takes no scale factor (options->" + field + " is " +
                    std::to_string(factor) + "); expected 1.0");
    }
  }
}

InitOptions init_options_of(const chorus_init_options_t* options) {
  static const char* const function = "chorus_init";
  InitOptions out;
  if (options == nullptr) return out;
  check_header(options->size, options->magic, options->version, kInitOptionsV1Size, function,
               "chorus_init_options_t", "CHORUS_INIT_OPTIONS_INITIALIZER");
  const int sets = options->num_process_sets;
  if (sets < 0) {
    throw invalid(std::string(function) + ": num_process_sets is " + std::to_string(sets) + "; expected 0 or more");
  }
  if (sets > 0) require_pointer(options->process_set_sizes, function, "process_set_sizes");
  size_t next = 0;
  for (int i = 0; i < sets; ++i) {
    const int count = options->process_set_sizes[i];
    if (count < 0) {
      throw invalid(std::string(function) + ": process_set_sizes[" + std::to_string(i) + "] is " +
                    std::to_string(count) + "; expected 0 or more");
    }
    if (count > 0) require_pointer(options->process_set_ranks, function, "process_set_ranks");
    out.process_sets.emplace_back(options->process_set_ranks + next, options->process_set_ranks + next + count);
    next += static_cast<size_t>(count);
  }
  return out;
}

}  // namespace chorus::c_api
