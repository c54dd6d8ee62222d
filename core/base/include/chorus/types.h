// The vocabulary of the public API: element types, reduce operations, devices
// and the non-owning tensor view that every collective takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/event.h"

namespace chorus {

enum class DataType : uint8_t {
  kUInt8 = 0,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kBool,  // broadcast and allgather only
  // Appended rather than placed by width, so that the values above keep
  // their numbers.
  kInt16,
  kUInt16,
};
constexpr int kNumDataTypes = 11;

// Size of one element in bytes.
size_t dtype_size(DataType dtype);
// "float32", "bfloat16", ...
const char* dtype_name(DataType dtype);
bool is_floating_point(DataType dtype);
// True when `value` names a DataType; accepts the names dtype_name() returns.
bool parse_dtype(const std::string& name, DataType* out);

// kAdasum: the adaptive sum of Maleki et al. (MLSys 2021), as Horovod's CPU
// Adasum: allreduce only, floating-point CPU tensors, a process set whose
// size is a power of two (docs/DESIGN.md, "Adasum").
enum class ReduceOp : uint8_t { kSum = 0, kAverage, kMin, kMax, kProduct, kAdasum };
const char* reduce_op_name(ReduceOp op);

// Where a tensor's memory lives. The CPU backends handle kCPU; a GPU backend
// (NCCL) registers for kCUDA; kCustom is a device that a program brings with
// a backend of its own (the test suite's asynchronous device does).
struct Device {
  enum class Kind : uint8_t { kCPU = 0, kCUDA = 1, kCustom = 2 };
  Kind kind = Kind::kCPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index) { return {Kind::kCUDA, index}; }
  static Device custom(int index) { return {Kind::kCustom, index}; }
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string to_string() const;
};

using Shape = std::vector<int64_t>;
int64_t num_elements(const Shape& shape);
// "[2, 3]"
std::string shape_to_string(const Shape& shape);

// A non-owning view of contiguous memory. The caller keeps the memory alive
// and untouched until the collective's handle is done.
struct Tensor {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  Shape shape;
  Device device;
  // When the contents are still being written on the device (a producer's
  // kernel queued on its stream): the event that fires once they are. The
  // collective starts after it, without the host waiting. None: ready now,
  // as host memory always is.
  std::shared_ptr<const Event> ready;

  Tensor() = default;
  Tensor(void* d, DataType t, Shape s, Device dev = Device::cpu())
      : data(d), dtype(t), shape(std::move(s)), device(dev) {}

  int64_t elements() const { return num_elements(shape); }
  size_t bytes() const { return static_cast<size_t>(elements()) * dtype_size(dtype); }
};

}  // namespace chorus
