#include "runtime/argument_checks.h"

#include <cmath>
#include <sstream>

namespace chorus {
namespace {

bool valid_reduce_op(ReduceOp op) { return static_cast<int>(op) <= static_cast<int>(ReduceOp::kAdasum); }

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

Status invalid(const std::string& name, const std::string& what) {
  return Status::InvalidArgument("'" + name + "': " + what);
}

// Every numeric dtype scales (integers through double, as Horovod does);
// only a factor that is not a number is refused.
Status check_scale_factors(const std::string& name, double prescale, double postscale) {
  for (const auto& [label, factor] : {std::pair<const char*, double>{"prescale", prescale}, {"postscale", postscale}}) {
    if (!std::isfinite(factor)) {
      std::ostringstream value;
      value << factor;
      return invalid(name, std::string(label) + " factor is " + value.str() + "; it must be finite");
    }
  }
  return Status::OK();
}

}  // namespace

Status check_name(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("A collective needs a non-empty name");
  if (name.rfind("chorus.", 0) == 0) {
    return Status::InvalidArgument("'" + name + "': names starting with 'chorus.' are reserved for Chorus");
  }
  return Status::OK();
}

Status check_tensor(const std::string& name, const char* role, const Tensor& tensor) {
  if (static_cast<int>(tensor.dtype) >= kNumDataTypes) {
    return invalid(name, std::string(role) + " has unknown dtype value " +
                             std::to_string(static_cast<int>(tensor.dtype)) +
                             "; expected one of uint8, int8, int16, uint16, int32, int64, float16, "
                             "bfloat16, float32, float64, bool");
  }
  for (int64_t dim : tensor.shape) {
    if (dim < 0) {
      return invalid(name, std::string(role) + " has shape " + shape_to_string(tensor.shape) +
                               "; dimensions must be >= 0");
    }
  }
  if (tensor.data == nullptr && tensor.elements() > 0) {
    return invalid(name, std::string(role) + " has " + std::to_string(tensor.elements()) +
                             " elements but no memory (data is null)");
  }
  return Status::OK();
}

Status check_allreduce(const std::string& name, const Tensor& input, const Tensor& output,
                       const AllreduceOptions& options) {
  CHORUS_RETURN_IF_ERROR(check_tensor(name, "input", input));
  CHORUS_RETURN_IF_ERROR(check_tensor(name, "output", output));
  if (input.dtype == DataType::kBool) {
    return invalid(name, "allreduce does not support bool tensors (only broadcast and allgather do)");
  }
  if (output.dtype != input.dtype || output.shape != input.shape || output.device != input.device) {
    return invalid(name, std::string("output is ") + dtype_name(output.dtype) + " " +
                             shape_to_string(output.shape) + " on " + output.device.to_string() +
                             "; expected the input's " + dtype_name(input.dtype) + " " +
                             shape_to_string(input.shape) + " on " + input.device.to_string());
  }
  if (!valid_reduce_op(options.op)) {
    return invalid(name, "unknown reduce op value " + std::to_string(static_cast<int>(options.op)) +
                             "; expected Sum, Average, Min, Max, Product or Adasum");
  }
  if (options.op == ReduceOp::kAdasum) {
    if (!is_floating_point(input.dtype)) {
      return invalid(name, std::string("reduce op adasum needs a floating-point tensor (float16, bfloat16, "
                                       "float32 or float64), not ") +
                               dtype_name(input.dtype));
    }
    if (input.device.kind != Device::Kind::kCPU) {
      return invalid(name, "reduce op adasum runs on CPU tensors only, but the tensor is on " +
                               input.device.to_string());
    }
  }
  return check_scale_factors(name, options.prescale_factor, options.postscale_factor);
}

Status check_adasum_ranks(const std::string& name, ReduceOp op, int32_t process_set, int size) {
  if (op != ReduceOp::kAdasum || power_of_two(size)) return Status::OK();
  return invalid(name, "reduce op adasum needs a process set whose size is a power of two (1, 2, 4, 8, ...), "
                       "but process set " + std::to_string(process_set) + " has " + std::to_string(size) +
                           " ranks");
}

Status check_has_first_dim(const std::string& name, const char* op, const Tensor& tensor) {
  CHORUS_RETURN_IF_ERROR(check_tensor(name, "input", tensor));
  if (tensor.shape.empty()) {
    return invalid(name, std::string(op) + " needs a tensor with at least one dimension, not a scalar");
  }
  return Status::OK();
}

Status check_root(const std::string& name, int root, int size) {
  if (root < 0 || root >= size) {
    return invalid(name, "root rank " + std::to_string(root) + " is out of range; expected 0 to " +
                             std::to_string(size - 1));
  }
  return Status::OK();
}

Status check_alltoall_splits(const std::string& name, const Tensor& input, int size,
                             std::vector<int64_t>* splits) {
  CHORUS_RETURN_IF_ERROR(check_has_first_dim(name, "alltoall", input));
  if (input.dtype == DataType::kBool) {
    return invalid(name, "alltoall does not support bool tensors (only broadcast and allgather do)");
  }
  const int64_t rows = input.shape[0];
  if (splits->empty()) {
    if (rows % size != 0) {
      return invalid(name, "alltoall without splits needs the first dimension (" + std::to_string(rows) +
                               ") to be divisible by the number of ranks (" + std::to_string(size) + ")");
    }
    splits->assign(size, rows / size);
    return Status::OK();
  }
  if (static_cast<int>(splits->size()) != size) {
    return invalid(name, "alltoall got " + std::to_string(splits->size()) + " splits; expected one per rank (" +
                             std::to_string(size) + ")");
  }
  int64_t total = 0;
  for (int64_t split : *splits) {
    if (split < 0) return invalid(name, "alltoall splits must be >= 0, got " + std::to_string(split));
    total += split;
  }
  if (total != rows) {
    return invalid(name, "alltoall splits sum to " + std::to_string(total) +
                             "; expected the first dimension, " + std::to_string(rows));
  }
  return Status::OK();
}

Status check_reducescatter(const std::string& name, const Tensor& input, const ReducescatterOptions& options) {
  CHORUS_RETURN_IF_ERROR(check_has_first_dim(name, "reducescatter", input));
  if (input.dtype == DataType::kBool) return invalid(name, "reducescatter does not support bool tensors");
  if (options.op == ReduceOp::kAdasum) {
    return invalid(name, "reducescatter does not support reduce op adasum (an allreduce op); expected Sum, "
                         "Average, Min, Max or Product");
  }
  if (!valid_reduce_op(options.op)) {
    return invalid(name, "unknown reduce op value " + std::to_string(static_cast<int>(options.op)) +
                             "; expected Sum, Average, Min, Max or Product");
  }
  return check_scale_factors(name, options.prescale_factor, options.postscale_factor);
}

}  // namespace chorus
