#include "ops/shm/shm_allreduce.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ops/kernels/ordered_reduce.h"
#include "ops/kernels/scale.h"
#include "ops/kernels/streaming_copy.h"

namespace chorus {
namespace {

constexpr int kStages = 3;
constexpr int64_t kLineBytes = 64;  // shares of a chunk are cut at cache lines

// The pieces of a message as one run of bytes: visits the parts of a byte
// range of the message that lie in one piece each.
class PieceRuns {
 public:
  PieceRuns(const std::vector<AllreducePiece>& pieces, int64_t element_bytes) : pieces_(pieces) {
    starts_.reserve(pieces.size() + 1);
    int64_t at = 0;
    for (const AllreducePiece& piece : pieces) {
      starts_.push_back(at);
      at += piece.count * element_bytes;
    }
    starts_.push_back(at);
  }
  int64_t bytes() const { return starts_.back(); }

  // Calls visit(input, output, bytes, offset) for each part of the `bytes`
  // bytes at message offset `begin`; offset counts from `begin`.
  template <typename Visit>
  Status each(int64_t begin, int64_t bytes, Visit&& visit) const {
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end() - 1, begin) - starts_.begin()) - 1;
    for (int64_t done = 0; done < bytes; ++i) {
      const int64_t offset = begin + done - starts_[i];
      const int64_t n = std::min(bytes - done, starts_[i + 1] - starts_[i] - offset);
      if (n <= 0) continue;  // an empty piece
      CHORUS_RETURN_IF_ERROR(visit(static_cast<const char*>(pieces_[i].input) + offset,
                                   static_cast<char*>(pieces_[i].output) + offset, n, done));
      done += n;
    }
    return Status::OK();
  }

 private:
  const std::vector<AllreducePiece>& pieces_;
  std::vector<int64_t> starts_;  // byte offset of each piece, then the total
};

}  // namespace

size_t ShmAllreduce::data_bytes(int ranks, int64_t chunk_bytes) {
  return static_cast<size_t>(kStages) * static_cast<size_t>(ranks) * static_cast<size_t>(chunk_bytes);
}

ShmAllreduce::ShmAllreduce(ShmGroup* group, const ShmAllreduceOptions& options)
    : group_(group),
      chunk_bytes_(options.chunk_bytes),
      one_stage_bytes_(options.one_stage_bytes),
      streaming_stores_(options.streaming_stores) {
  const int64_t chunk_bytes = options.chunk_bytes;
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

Status ShmAllreduce::check(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                           double factor) const {
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
  if (factor != 1.0 && !is_floating_point(dtype)) {
    return Status::InvalidArgument(std::string("shared-memory allreduce: a ") + dtype_name(dtype) +
                                   " result can only be scaled by 1, got " + std::to_string(factor) +
                                   " (integer averages are divided after the allreduce)");
  }
  for (const AllreducePiece& piece : pieces) {
    if (piece.count < 0) {
      return Status::InvalidArgument("shared-memory allreduce: negative count " + std::to_string(piece.count));
    }
    if (piece.count > 0 && (piece.input == nullptr || piece.output == nullptr)) {
      return Status::InvalidArgument("shared-memory allreduce: null buffer with " + std::to_string(piece.count) +
                                     " elements");
    }
  }
  return Status::OK();
}

Status ShmAllreduce::allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                               const ShareStep& after_reduce, double factor) {
  return allreduce({AllreducePiece{input, output, count}}, dtype, op, after_reduce, factor);
}

Status ShmAllreduce::allreduce(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                               const ShareStep& after_reduce, double factor) {
  CHORUS_RETURN_IF_ERROR(check(pieces, dtype, op, factor));
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  const PieceRuns message(pieces, esize);
  const int64_t count = message.bytes() / esize;
  if (count == 0) return Status::OK();
  if (message.bytes() <= std::min(one_stage_bytes_, chunk_bytes_) && !after_reduce) {
    return allreduce_one_stage(pieces, message.bytes(), dtype, op, factor);
  }
  const int ranks = group_->size();
  const int me = group_->rank();
  ShmSignals& signals = group_->signals();
  const int64_t chunk_elements = chunk_bytes_ / esize;
  const int64_t chunks = (count + chunk_elements - 1) / chunk_elements;
  const int64_t line_elements = kLineBytes / esize;
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
  // From chunk kStages on, this allreduce rewrites slots that the peers read
  // a few chunks ago and still hold: streaming stores skip fetching those
  // lines back (ops/kernels/streaming_copy.h). The first chunks' slots have
  // sat idle since the previous allreduce, and a peer reads them faster from
  // a cache than from memory.
  const bool streaming = streaming_stores_;
  auto to_slot = [&](int64_t chunk, char* to, const char* from, int64_t bytes) {
    if (streaming && chunk >= kStages) {
      copy_streaming(to, from, static_cast<size_t>(bytes));
    } else {
      std::memcpy(to, from, static_cast<size_t>(bytes));
    }
  };
  auto post = [&](ShmSignals::Counter counter, int64_t chunk) {
    if (streaming && chunk >= kStages) streaming_stores_done();
    signals.post(counter, first + static_cast<uint64_t>(chunk) + 1);
  };
  auto copy_in = [&](int64_t chunk) {
    const uint64_t seq = first + static_cast<uint64_t>(chunk);
    char* mine = slot(seq, me);
    for (int r = 0; r < ranks; ++r) {
      if (r == me) continue;
      const Share share = share_of(chunk, r);
      (void)message.each(chunk * chunk_elements * esize + share.offset, share.bytes,
                         [&](const char* from, char*, int64_t bytes, int64_t offset) {
                           to_slot(chunk, mine + share.offset + offset, from, bytes);
                           return Status::OK();
                         });
    }
    post(ShmSignals::kArrived, chunk);
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
    return message.each(chunk * chunk_elements * esize + share.offset, share.bytes,
                        [&](const char* in, char* out, int64_t bytes, int64_t offset) {
                          for (int r = 0; r < ranks; ++r) {
                            sources[r] = r == me ? in : slot(seq, r) + share.offset + offset;
                          }
                          const int64_t n = bytes / esize;
                          // The cross-host step sends the share in its dtype: with one,
                          // 16-bit results round before it and again when scaled.
                          if (after_reduce) {
                            CHORUS_RETURN_IF_ERROR(reduce_ranks_in_order(out, sources, ranks, n, dtype, op));
                            CHORUS_RETURN_IF_ERROR(after_reduce(out, n));
                            if (factor != 1.0) CHORUS_RETURN_IF_ERROR(scale(out, out, n, dtype, factor));
                          } else {
                            CHORUS_RETURN_IF_ERROR(
                                reduce_ranks_in_order_to(ReducedOutput{out, factor}, sources, ranks, n, dtype, op));
                          }
                          to_slot(chunk, slot(seq, me) + share.offset + offset, out, bytes);
                          return Status::OK();
                        });
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
    post(ShmSignals::kReduced, chunk);
    if (chunk + 1 < chunks) copy_in(chunk + 1);
    status = signals.wait_all(ShmSignals::kReduced, seq + 1, describe("reduce", chunk));
    if (!status.ok()) break;
    for (int r = 0; r < ranks; ++r) {
      if (r == me) continue;
      const Share share = share_of(chunk, r);
      const char* theirs = slot(seq, r);
      (void)message.each(chunk * chunk_elements * esize + share.offset, share.bytes,
                         [&](const char*, char* to, int64_t bytes, int64_t offset) {
                           std::memcpy(to, theirs + share.offset + offset, static_cast<size_t>(bytes));
                           return Status::OK();
                         });
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

Status ShmAllreduce::allreduce_one_stage(const std::vector<AllreducePiece>& pieces, int64_t bytes, DataType dtype,
                                         ReduceOp op, double factor) {
  const int ranks = group_->size();
  const int me = group_->rank();
  const int64_t esize = static_cast<int64_t>(dtype_size(dtype));
  ShmSignals& signals = group_->signals();
  const uint64_t seq = signals.mine(ShmSignals::kReduced);
  char* mine = slot(seq, me);
  int64_t at = 0;
  for (const AllreducePiece& piece : pieces) {
    const int64_t n = piece.count * esize;
    std::memcpy(mine + at, piece.input, static_cast<size_t>(n));
    at += n;
  }
  signals.post(ShmSignals::kArrived, seq + 1);
  chunk_copied_in(0);
  Status status = signals.wait_all(ShmSignals::kArrived, seq + 1, [bytes] {
    return "copy in the one-stage allreduce of " + std::to_string(bytes) + " bytes";
  });
  if (status.ok()) {
    std::vector<const void*> sources(static_cast<size_t>(ranks));
    at = 0;
    for (const AllreducePiece& piece : pieces) {
      if (piece.count == 0) continue;
      for (int r = 0; r < ranks; ++r) sources[static_cast<size_t>(r)] = slot(seq, r) + at;
      status = reduce_ranks_in_order_to(ReducedOutput{piece.output, factor}, sources.data(), ranks, piece.count,
                                        dtype, op);
      if (!status.ok()) break;
      at += piece.count * esize;
    }
  }
  if (!status.ok()) {
    broken_ = status;
    signals.post_failure(status.message());
    return status;
  }
  signals.post(ShmSignals::kReduced, seq + 1);
  return status;
}

}  // namespace chorus
