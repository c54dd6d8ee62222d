#include "host_collectives.h"

#include <cstring>

#include "chorus/chorus.h"

namespace train_mnist_cuda {

std::vector<double> allreduce_sum(const std::vector<double>& values, const std::string& name) {
  std::vector<double> sums = values;
  chorus::AllreduceOptions sum;
  sum.op = chorus::ReduceOp::kSum;
  chorus::allreduce(name, chorus::Tensor(sums.data(), chorus::DataType::kFloat64,
                                         {static_cast<int64_t>(sums.size())}),
                    sum);
  return sums;
}

std::string broadcast_string(const std::string& value, int root, const std::string& name) {
  const int64_t length = broadcast_int(static_cast<int64_t>(value.size()), root, name + ".length");
  std::string result = value;
  result.resize(static_cast<size_t>(length));
  if (length > 0) {
    chorus::broadcast(name, chorus::Tensor(result.data(), chorus::DataType::kUInt8, {length}), root);
  }
  return result;
}

int64_t broadcast_int(int64_t value, int root, const std::string& name) {
  chorus::broadcast(name, chorus::Tensor(&value, chorus::DataType::kInt64, {1}), root);
  return value;
}

double broadcast_double(double value, int root, const std::string& name) {
  chorus::broadcast(name, chorus::Tensor(&value, chorus::DataType::kFloat64, {1}), root);
  return value;
}

void broadcast_floats(std::vector<float>& values, int root, const std::string& name) {
  chorus::broadcast(name, chorus::Tensor(values.data(), chorus::DataType::kFloat32,
                                         {static_cast<int64_t>(values.size())}),
                    root);
}

std::vector<uint64_t> allgather_u64(uint64_t value, const std::string& name) {
  int64_t mine = 0;
  std::memcpy(&mine, &value, sizeof(mine));
  const chorus::Handle handle =
      chorus::allgather(name, chorus::Tensor(&mine, chorus::DataType::kInt64, {1}));
  const chorus::Tensor all = handle.output();  // owned by the handle
  std::vector<uint64_t> values(static_cast<size_t>(all.elements()));
  std::memcpy(values.data(), all.data, values.size() * sizeof(uint64_t));
  return values;
}

int allreduce_min(int value, const std::string& name) {
  int32_t result = value;
  chorus::AllreduceOptions min;
  min.op = chorus::ReduceOp::kMin;
  chorus::allreduce(name, chorus::Tensor(&result, chorus::DataType::kInt32, {1}), min);
  return result;
}

}  // namespace train_mnist_cuda
