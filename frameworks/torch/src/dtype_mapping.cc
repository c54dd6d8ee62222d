// torch <-> chorus element types.
#include <string>

#include "chorus/torch/ops.h"

namespace chorus {
namespace torch {

DataType to_chorus_dtype(c10::ScalarType type, const std::string& what) {
  switch (type) {
    case c10::ScalarType::Byte: return DataType::kUInt8;
    case c10::ScalarType::Char: return DataType::kInt8;
    case c10::ScalarType::Int: return DataType::kInt32;
    case c10::ScalarType::Long: return DataType::kInt64;
    case c10::ScalarType::Half: return DataType::kFloat16;
    case c10::ScalarType::BFloat16: return DataType::kBFloat16;
    case c10::ScalarType::Float: return DataType::kFloat32;
    case c10::ScalarType::Double: return DataType::kFloat64;
    case c10::ScalarType::Bool: return DataType::kBool;
    default: break;
  }
  throw Error(Status::InvalidArgument(
      "tensor '" + what + "' has dtype " + std::string(c10::toString(type)) +
      ", which Chorus does not support; expected one of uint8, int8, int32, int64, float16, "
      "bfloat16, float32, float64, bool (bool for broadcast and allgather only)"));
}

c10::ScalarType to_torch_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return c10::ScalarType::Byte;
    case DataType::kInt8: return c10::ScalarType::Char;
    case DataType::kInt32: return c10::ScalarType::Int;
    case DataType::kInt64: return c10::ScalarType::Long;
    case DataType::kFloat16: return c10::ScalarType::Half;
    case DataType::kBFloat16: return c10::ScalarType::BFloat16;
    case DataType::kFloat32: return c10::ScalarType::Float;
    case DataType::kFloat64: return c10::ScalarType::Double;
    case DataType::kBool: return c10::ScalarType::Bool;
  }
  throw Error(Status::InvalidArgument("unknown chorus dtype " +
                                      std::to_string(static_cast<int>(dtype))));
}

}  // namespace torch
}  // namespace chorus
