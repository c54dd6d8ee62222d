#include "ops/shm/shm_allreduce.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/kernels/ordered_reduce.h"

namespace chorus {
namespace {

constexpr int kStages = 2;
constexpr int64_t kLineBytes = 64;  // shares of a chunk are cut at cache lines

}  // namespace

size_t ShmAllreduce::data_bytes(int ranks, int64_t chunk_bytes) {
  return static_cast<size_t>(kStages) * static_cast<size_t>(ranks + 1) * static_cast<size_t>(chunk_bytes);
}

ShmAllreduce::ShmAllreduce(ShmGroup* group, int64_t chunk_bytes) : group_(group), chunk_bytes_(chunk_bytes) {
  if (chunk_bytes <= 0 || chunk_bytes % 128 != 0) {
    broken_ = Status::InvalidArgument("ShmAllreduce: chunk size must be a positive multiple of 128 bytes, got " +
                                      std::to_string(chunk_bytes));
  } else if (group->data_bytes() < data_bytes(group->size(), chunk_bytes)) {
    broken_ = Status::InvalidArgument("ShmAllreduce: the group's data area of " +
                                      std::to_string(group->data_bytes()) + " bytes is smaller than the " +
                                      std::to_string(data_bytes(group->size(), chunk_bytes)) + " bytes needed");
  }
}

char* ShmAllreduce::slot(uint64_t stage, int rank) const {
  const size_t index = static_cast<size_t>(stage % kStages) * static_cast<size_t>(group_->size() + 1) +
                       static_cast<size_t>(rank);
  return group_->data() + index * static_cast<size_t>(chunk_bytes_);
}

char* ShmAllreduce::result(uint64_t stage) const { return slot(stage, group_->size()); }

Status ShmAllreduce::check(const void* input, const void* output, int64_t count, DataType dtype,
                           ReduceOp op) const {
  CHORUS_RETURN_IF_ERROR(broken_);
  if (op != ReduceOp::kSum && op != ReduceOp::kMin && op != ReduceOp::kMax && op != ReduceOp::kProduct) {
    return Status::InvalidArgument(std::string("shared-memory allreduce: reduce op must be sum, min, max or "
                                               "product (the executor turns average into sum), got ") +
                                   reduce_op_name(op));
  }
  if (static_cast<int>(dtype) >= kNumDataTypes || dtype == DataType::kBool) {
    return Status::InvalidArgument("shared-memory allreduce: dtype must be numeric, got " +
                                   std::string(static_cast<int>(dtype) >= kNumDataTypes ? "an invalid dtype"
                                                                                       : dtype_name(dtype)));
  }
  if (count < 0) return Status::InvalidArgument("shared-memory allreduce: negative count " + std::to_string(count));
  if (count > 0 && (input == nullptr || output == nullptr)) {
    return Status::InvalidArgument("shared-memory allreduce: null buffer with " + std::to_string(count) +
                                   " elements");
  }
  return Status::OK();
}

Status ShmAllreduce::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op) {
  CHORUS_RETURN_IF_ERROR(check(input, output, count, dtype, op));
  if (count == 0) return Status::OK();
  const int ranks = group_->size();
  const int me = group_->rank();
  ShmSignals& signals = group_->signals();
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  const int64_t chunk_elements = chunk_bytes_ / esize;
  const int64_t chunks = (count + chunk_elements - 1) / chunk_elements;
  const int64_t line_elements = kLineBytes / esize;
  const auto* in = static_cast<const char*>(input);
  auto* out = static_cast<char*>(output);
  const uint64_t first = signals.mine(ShmSignals::kReduced);  // chunks this rank has completed

  auto elements_of = [&](int64_t chunk) { return std::min(chunk_elements, count - chunk * chunk_elements); };
  auto copy_in = [&](int64_t chunk) {
    const uint64_t seq = first + static_cast<uint64_t>(chunk);
    std::memcpy(slot(seq, me), in + chunk * chunk_elements * esize, static_cast<size_t>(elements_of(chunk) * esize));
    signals.post(ShmSignals::kArrived, seq + 1);
    chunk_copied_in(chunk);
  };
  auto describe = [&](const char* step, int64_t chunk) {
    return [=] {
      return std::string(step) + " chunk " + std::to_string(chunk + 1) + " of " + std::to_string(chunks) +
             " of an allreduce of " + std::to_string(count * esize) + " bytes";
    };
  };

  std::vector<const void*> sources(static_cast<size_t>(ranks));
  Status status;
  copy_in(0);
  for (int64_t chunk = 0; chunk < chunks && status.ok(); ++chunk) {
    const uint64_t seq = first + static_cast<uint64_t>(chunk);
    status = signals.wait_all(ShmSignals::kArrived, seq + 1, describe("copy in", chunk));
    if (!status.ok()) break;
    // This rank's share: whole cache lines [lines*me/ranks, lines*(me+1)/ranks).
    const int64_t n = elements_of(chunk);
    const int64_t lines = (n + line_elements - 1) / line_elements;
    const int64_t begin = std::min(n, lines * me / ranks * line_elements);
    const int64_t end = std::min(n, lines * (me + 1) / ranks * line_elements);
    if (end > begin) {
      for (int r = 0; r < ranks; ++r) sources[static_cast<size_t>(r)] = slot(seq, r) + begin * esize;
      status = reduce_ranks_in_order(result(seq) + begin * esize, sources.data(), ranks, end - begin, dtype, op);
      if (!status.ok()) break;
    }
    signals.post(ShmSignals::kReduced, seq + 1);
    if (chunk + 1 < chunks) copy_in(chunk + 1);
    status = signals.wait_all(ShmSignals::kReduced, seq + 1, describe("reduce", chunk));
    if (!status.ok()) break;
    std::memcpy(out + chunk * chunk_elements * esize, result(seq), static_cast<size_t>(n * esize));
  }
  if (!status.ok()) broken_ = status;
  return status;
}

}  // namespace chorus
