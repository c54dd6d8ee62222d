#include "contracts/backend.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace chorus {

Status Backend::check_reduction(DataType) const { return Status::OK(); }

bool pieces_overlap(const std::vector<AllreducePiece>& pieces, size_t element_bytes) {
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;  // [begin, end) in bytes
  ranges.reserve(2 * pieces.size());
  for (const AllreducePiece& piece : pieces) {
    if (piece.count <= 0) continue;
    const uintptr_t bytes = static_cast<uintptr_t>(piece.count) * element_bytes;
    const auto output = reinterpret_cast<uintptr_t>(piece.output);
    const auto input = reinterpret_cast<uintptr_t>(piece.input);
    if (output != 0) ranges.emplace_back(output, output + bytes);
    if (input != 0 && input != output) ranges.emplace_back(input, input + bytes);
  }
  // Tensors allocated one after another usually come in address order.
  if (!std::is_sorted(ranges.begin(), ranges.end())) std::sort(ranges.begin(), ranges.end());
  uintptr_t end = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0 && ranges[i].first < end) return true;
    end = std::max(end, ranges[i].second);
  }
  return false;
}

bool Backend::fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const {
  (void)count;
  (void)dtype;
  (void)op;
  return false;
}

WorkPtr Backend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                  double factor) {
  (void)dtype;
  (void)op;
  (void)factor;
  return finished_work(Status::Internal(std::string("the ") + name() + " backend was asked to allreduce " +
                                        std::to_string(pieces.size()) + " pieces in place, which it does not do"));
}

WorkPtr Backend::adasum(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor) {
  (void)buffer;
  (void)dtype;
  (void)factor;
  return finished_work(Status::InvalidArgument(std::string("the ") + name() + " backend does not run Adasum (" +
                                               std::to_string(counts.size()) +
                                               " tensors): Adasum runs on CPU tensors, over MPI"));
}

Status Backend::use_allreduce_algorithm(const std::string& algorithm) {
  for (const std::string& mine : allreduce_algorithms()) {
    if (mine == algorithm) return Status::OK();
  }
  return Status::InvalidArgument(std::string("the ") + name() + " backend has no allreduce algorithm '" + algorithm +
                                 "'");
}

}  // namespace chorus
