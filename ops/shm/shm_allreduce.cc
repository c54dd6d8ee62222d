#include "ops/shm/shm_allreduce.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/kernels/ordered_reduce.h"

namespace chorus {
namespace {

constexpr int kStages = 3;
constexpr int64_t kLineBytes = 64;  // shares of a chunk are cut at cache lines

}  // namespace

size_t ShmAllreduce::data_bytes(int ranks, int64_t chunk_bytes) {
  return static_cast<size_t>(kStages) * static_cast<size_t>(ranks) * static_cast<size_t>(chunk_bytes);
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

char* ShmAllreduce::slot(uint64_t sequence, int rank) const {
  const size_t index = static_cast<size_t>(sequence % kStages) * static_cast<size_t>(group_->size()) +
                       static_cast<size_t>(rank);
  return group_->data() + index * static_cast<size_t>(chunk_bytes_);
}

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

Status ShmAllreduce::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                               const ShareStep& after_reduce) {
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

  // Chunk `chunk` starts at element chunk * chunk_elements; share r of it is
  // the whole lines [lines*r/ranks, lines*(r+1)/ranks), as byte offsets.
  struct Share {
    int64_t offset;
    int64_t bytes;
  };
  auto share_of = [&](int64_t chunk, int rank) {
    const int64_t n = std::min(chunk_elements, count - chunk * chunk_elements);
    const int64_t lines = (n + line_elements - 1) / line_elements;
    const int64_t begin = std::min(n, lines * rank / ranks * line_elements);
    const int64_t end = std::min(n, lines * (rank + 1) / ranks * line_elements);
    return Share{begin * esize, (end - begin) * esize};
  };
  auto copy_in = [&](int64_t chunk) {
    const uint64_t seq = first + static_cast<uint64_t>(chunk);
    const char* from = in + chunk * chunk_elements * esize;
    for (int r = 0; r < ranks; ++r) {
      if (r == me) continue;
      const Share share = share_of(chunk, r);
      std::memcpy(slot(seq, me) + share.offset, from + share.offset, static_cast<size_t>(share.bytes));
    }
    signals.post(ShmSignals::kArrived, seq + 1);
    chunk_copied_in(chunk);
  };
  auto describe = [&](const char* step, int64_t chunk) {
    return [=] {
      return std::string(step) + " chunk " + std::to_string(chunk + 1) + " of " + std::to_string(chunks) +
             " of an allreduce of " + std::to_string(count * esize) + " bytes";
    };
  };
  auto reduce_my_share = [&](int64_t chunk, const void** sources) {
    const uint64_t seq = first + static_cast<uint64_t>(chunk);
    const Share share = share_of(chunk, me);
    if (share.bytes == 0) return Status::OK();
    const int64_t at = chunk * chunk_elements * esize + share.offset;
    for (int r = 0; r < ranks; ++r) sources[r] = r == me ? in + at : slot(seq, r) + share.offset;
    CHORUS_RETURN_IF_ERROR(reduce_ranks_in_order(out + at, sources, ranks, share.bytes / esize, dtype, op));
    if (after_reduce) CHORUS_RETURN_IF_ERROR(after_reduce(out + at, share.bytes / esize));
    std::memcpy(slot(seq, me) + share.offset, out + at, static_cast<size_t>(share.bytes));
    return Status::OK();
  };

  std::vector<const void*> sources(static_cast<size_t>(ranks));
  Status status;
  copy_in(0);
  for (int64_t chunk = 0; chunk < chunks && status.ok(); ++chunk) {
    const uint64_t seq = first + static_cast<uint64_t>(chunk);
    status = signals.wait_all(ShmSignals::kArrived, seq + 1, describe("copy in", chunk));
    if (!status.ok()) break;
    status = reduce_my_share(chunk, sources.data());
    if (!status.ok()) break;
    signals.post(ShmSignals::kReduced, seq + 1);
    if (chunk + 1 < chunks) copy_in(chunk + 1);
    status = signals.wait_all(ShmSignals::kReduced, seq + 1, describe("reduce", chunk));
    if (!status.ok()) break;
    char* to = out + chunk * chunk_elements * esize;
    for (int r = 0; r < ranks; ++r) {
      if (r == me) continue;
      const Share share = share_of(chunk, r);
      std::memcpy(to + share.offset, slot(seq, r) + share.offset, static_cast<size_t>(share.bytes));
    }
  }
  if (!status.ok()) {
    broken_ = status;
    // The peers may be waiting for this rank's next post (e.g. after its
    // cross-host step failed): tell them why it will never come, rather than
    // let them wait for the timeout.
    signals.post_failure(status.message());
  }
  return status;
}

}  // namespace chorus
