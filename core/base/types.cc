#include "chorus/types.h"

#include <sstream>

namespace chorus {
namespace {
struct DtypeInfo {
  DataType dtype;
  const char* name;
  size_t size;
  bool floating;
};
constexpr DtypeInfo kDtypes[] = {
    {DataType::kUInt8, "uint8", 1, false},     {DataType::kInt8, "int8", 1, false},
    {DataType::kInt32, "int32", 4, false},     {DataType::kInt64, "int64", 8, false},
    {DataType::kFloat16, "float16", 2, true},  {DataType::kBFloat16, "bfloat16", 2, true},
    {DataType::kFloat32, "float32", 4, true},  {DataType::kFloat64, "float64", 8, true},
    {DataType::kBool, "bool", 1, false},       {DataType::kInt16, "int16", 2, false},
    {DataType::kUInt16, "uint16", 2, false},
};
static_assert(sizeof(kDtypes) / sizeof(kDtypes[0]) == kNumDataTypes, "one entry per DataType, in order");
const DtypeInfo& info(DataType dtype) {
  const auto index = static_cast<size_t>(dtype);
  return index < kNumDataTypes ? kDtypes[index] : kDtypes[0];
}
}  // namespace

size_t dtype_size(DataType dtype) { return info(dtype).size; }

const char* dtype_name(DataType dtype) {
  return static_cast<size_t>(dtype) < kNumDataTypes ? info(dtype).name : "invalid-dtype";
}

bool is_floating_point(DataType dtype) { return info(dtype).floating; }

bool parse_dtype(const std::string& name, DataType* out) {
  for (const auto& entry : kDtypes) {
    if (name == entry.name) {
      *out = entry.dtype;
      return true;
    }
  }
  return false;
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAverage: return "average";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "product";
    case ReduceOp::kAdasum: return "adasum";
  }
  return "invalid-reduce-op";
}

std::string Device::to_string() const {
  switch (kind) {
    case Kind::kCPU: return "cpu";
    case Kind::kCUDA: return "cuda:" + std::to_string(index);
    case Kind::kCustom: return "custom:" + std::to_string(index);
  }
  return "unknown device kind " + std::to_string(static_cast<int>(kind));
}

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

}  // namespace chorus
