// torch <-> chorus element types.
#include <string>

#include <torch/version.h>

#include "chorus/torch/ops.h"

namespace chorus {
namespace torch {

DataType to_chorus_dtype(c10::ScalarType type, const std::string& what) {
  switch (type) {
    case c10::ScalarType::Byte: return DataType::kUInt8;
    case c10::ScalarType::Char: return DataType::kInt8;
    case c10::ScalarType::Short: return DataType::kInt16;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    case c10::ScalarType::UInt16: return DataType::kUInt16;
#endif
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
      ", which Chorus does not support; expected one of uint8, int8, int16, int32, int64, "
      "float16, bfloat16, float32, float64, bool (bool for broadcast and allgather only)"));
}

c10::ScalarType to_torch_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return c10::ScalarType::Byte;
    case DataType::kInt8: return c10::ScalarType::Char;
    case DataType::kInt16: return c10::ScalarType::Short;
    case DataType::kUInt16:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
      return c10::ScalarType::UInt16;
#else
      throw Error(Status::InvalidArgument("chorus dtype uint16 has no torch dtype in LibTorch " TORCH_VERSION
                                          " (torch.uint16 arrived in 2.3)"));
#endif
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
