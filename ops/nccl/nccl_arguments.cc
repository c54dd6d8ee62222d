#include "ops/nccl/nccl_arguments.h"

#include <limits>
#include <string>

namespace chorus {

int64_t max_elements(size_t element_size) {
  return std::numeric_limits<int64_t>::max() / static_cast<int64_t>(element_size == 0 ? 1 : element_size);
}

Status check_count(const char* collective, const char* what, int64_t count, size_t element_size) {
  if (count < 0) {
    return Status::InvalidArgument(std::string(collective) + ": " + what + " is negative: " + std::to_string(count));
  }
  const int64_t limit = max_elements(element_size);
  if (count > limit) {
    return Status::InvalidArgument(std::string(collective) + ": " + what + " is " + std::to_string(count) +
                                   " elements of " + std::to_string(element_size) + " bytes, above the " +
                                   std::to_string(limit) + " elements whose bytes a buffer can address");
  }
  return Status::OK();
}

Status check_buffer(const char* collective, const char* which, const void* pointer, int64_t count) {
  if (pointer != nullptr || count <= 0) return Status::OK();
  return Status::InvalidArgument(std::string(collective) + ": " + which + " is null but holds " +
                                 std::to_string(count) + " elements");
}

Status rank_blocks(const char* collective, const char* what, const std::vector<int64_t>& counts, int size,
                   size_t element_size, RankBlocks* out) {
  if (counts.size() != static_cast<size_t>(size)) {
    return Status::InvalidArgument(std::string(collective) + ": expected " + std::to_string(size) + " " + what +
                                   " (one per rank), got " + std::to_string(counts.size()));
  }
  out->counts.assign(counts.size(), 0);
  out->offsets.assign(counts.size(), 0);
  out->equal = true;
  const int64_t limit = max_elements(element_size);
  int64_t total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const std::string name = std::string(what) + "[" + std::to_string(r) + "]";
    CHORUS_RETURN_IF_ERROR(check_count(collective, name.c_str(), counts[r], element_size));
    if (counts[r] > limit - total) {
      return Status::InvalidArgument(std::string(collective) + ": the " + what + " add up to more than the " +
                                     std::to_string(limit) + " elements of " + std::to_string(element_size) +
                                     " bytes a buffer can address (at " + name + ")");
    }
    out->offsets[r] = static_cast<size_t>(total);
    out->counts[r] = static_cast<size_t>(counts[r]);
    out->equal = out->equal && counts[r] == counts[0];
    total += counts[r];
  }
  out->total = static_cast<size_t>(total);
  return Status::OK();
}

Status check_root(const char* collective, int root, int size) {
  if (root >= 0 && root < size) return Status::OK();
  return Status::InvalidArgument(std::string(collective) + ": root rank " + std::to_string(root) + " is not in [0, " +
                                 std::to_string(size) + ")");
}

}  // namespace chorus
