#include "ops/cuda/copy_plan.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <string>

namespace chorus {
namespace {

// CUDA's limit on a grid's x dimension.
constexpr uint64_t kMaxGridBlocks = (uint64_t{1} << 31) - 1;

// Byte ranges [begin, end) of one launch, kept disjoint by merging, so that
// whether a new range overlaps any is two neighbours' question.
class RangeSet {
 public:
  bool overlaps(uintptr_t begin, uintptr_t end) const {
    auto next = ranges_.upper_bound(begin);
    if (next != ranges_.end() && next->first < end) return true;
    if (next == ranges_.begin()) return false;
    return std::prev(next)->second > begin;
  }

  void add(uintptr_t begin, uintptr_t end) {
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != ranges_.end() && it->first <= end) {
      if (it->second > end) end = it->second;
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }

  void clear() { ranges_.clear(); }

 private:
  std::map<uintptr_t, uintptr_t> ranges_;  // begin -> end
};

uintptr_t address(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

}  // namespace

Status plan_copies(const std::vector<DeviceOps::Copy>& copies, const CopyLimits& limits,
                   std::vector<CopyLaunch>* launches) {
  launches->clear();
  if (limits.pieces_per_launch == 0 || limits.bytes_per_block == 0) {
    return Status::InvalidArgument("copy: a launch must hold at least one piece and one byte per block");
  }
  RangeSet written;
  RangeSet read;
  for (const DeviceOps::Copy& copy : copies) {
    if (copy.bytes == 0 || copy.from == copy.to) continue;
    if (copy.to == nullptr) {
      launches->clear();
      return Status::InvalidArgument("copy: a null destination for " + std::to_string(copy.bytes) + " bytes");
    }
    const uintptr_t to = address(copy.to);
    const uintptr_t from = address(copy.from);
    if (copy.from != nullptr && from < to + copy.bytes && to < from + copy.bytes) {
      launches->clear();
      return Status::InvalidArgument("copy: the source and destination of a piece of " + std::to_string(copy.bytes) +
                                     " bytes overlap (" + std::to_string(to > from ? to - from : from - to) +
                                     " bytes apart); expected disjoint memory or the same address");
    }
    const uint64_t blocks = (copy.bytes + limits.bytes_per_block - 1) / limits.bytes_per_block;
    if (blocks > kMaxGridBlocks) {
      launches->clear();
      return Status::InvalidArgument("copy: a piece of " + std::to_string(copy.bytes) + " bytes needs " +
                                     std::to_string(blocks) + " blocks, more than a grid holds");
    }
    const bool conflicts = written.overlaps(to, to + copy.bytes) || read.overlaps(to, to + copy.bytes) ||
                           (copy.from != nullptr && written.overlaps(from, from + copy.bytes));
    if (launches->empty() || conflicts || launches->back().pieces.size() == limits.pieces_per_launch ||
        launches->back().blocks + blocks > kMaxGridBlocks) {
      launches->emplace_back();
      written.clear();
      read.clear();
    }
    CopyLaunch& launch = launches->back();
    launch.pieces.push_back(CopyPiece{static_cast<char*>(copy.to), static_cast<const char*>(copy.from), copy.bytes,
                                      launch.blocks});
    launch.blocks += static_cast<uint32_t>(blocks);
    written.add(to, to + copy.bytes);
    if (copy.from != nullptr) read.add(from, from + copy.bytes);
  }
  return Status::OK();
}

}  // namespace chorus
