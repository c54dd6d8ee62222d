#include "ops/mpi/adasum.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "ops/kernels/convert.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {
namespace {

// Messages of this algorithm on the backend's communicator; its collectives
// are matched apart from point-to-point messages anyway.
constexpr int kTag = 0x4ada;

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

MpiAdasum::MpiAdasum(MPI_Comm comm, int rank, int size, int64_t count_limit)
    : comm_(comm), rank_(rank), size_(size), count_limit_(count_limit) {}

Status MpiAdasum::reduce(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor) {
  if (!is_floating_point(dtype)) {
    return Status::InvalidArgument(std::string("adasum: dtype '") + dtype_name(dtype) +
                                   "' cannot be combined by Adasum; expected float16, bfloat16, float32 or float64");
  }
  if (!power_of_two(size_)) {
    return Status::InvalidArgument("adasum: needs a power-of-two number of ranks, but the communicator has " +
                                   std::to_string(size_));
  }
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0) {
      return Status::InvalidArgument("adasum: counts[" + std::to_string(i) + "] is negative: " +
                                     std::to_string(counts[i]));
    }
    total += counts[i];
  }
  if (total == 0) return Status::OK();
  if (buffer == nullptr) {
    return Status::InvalidArgument("adasum: buffer is null but holds " + std::to_string(total) + " elements");
  }
  switch (dtype) {
    case DataType::kFloat32: return reduce_typed(static_cast<float*>(buffer), counts, MPI_FLOAT, factor);
    case DataType::kFloat64: return reduce_typed(static_cast<double*>(buffer), counts, MPI_DOUBLE, factor);
    default: break;
  }
  // float16, bfloat16: in float32, rounded back once.
  widened_.resize(static_cast<size_t>(total));
  CHORUS_RETURN_IF_ERROR(convert(buffer, dtype, widened_.data(), DataType::kFloat32, total));
  CHORUS_RETURN_IF_ERROR(reduce_typed(widened_.data(), counts, MPI_FLOAT, factor));
  return convert(widened_.data(), DataType::kFloat32, buffer, dtype, total);
}

template <typename T>
Status MpiAdasum::reduce_typed(T* data, const std::vector<int64_t>& counts, MPI_Datatype type, double factor) {
  int64_t begin = 0;
  int64_t end = 0;
  for (int64_t count : counts) end += count;
  // The part held before each level's halving, for the way back.
  std::vector<std::pair<int64_t, int64_t>> parents;
  for (int level = 1; level < size_; level <<= 1) {
    parents.emplace_back(begin, end);
    const int64_t middle = begin + (end - begin) / 2;
    const bool left = (rank_ & level) == 0;
    const int64_t keep_begin = left ? begin : middle;
    const int64_t keep_end = left ? middle : end;
    const int64_t give_begin = left ? middle : begin;
    const int64_t give_end = left ? end : middle;
    received_.resize(static_cast<size_t>(keep_end - keep_begin) * sizeof(T));
    T* theirs = reinterpret_cast<T*>(received_.data());
    CHORUS_RETURN_IF_ERROR(exchange(data + give_begin, give_end - give_begin, theirs, keep_end - keep_begin, type,
                                    sizeof(T), rank_ ^ level));
    begin = keep_begin;
    end = keep_end;
    CHORUS_RETURN_IF_ERROR(combine(data + begin, theirs, begin, end, counts, level));
  }
  // Each element is scaled once, by the rank that holds it now.
  if (factor != 1.0) {
    for (int64_t i = begin; i < end; ++i) data[i] = static_cast<T>(static_cast<double>(data[i]) * factor);
  }
  for (int level = size_ >> 1; level > 0; level >>= 1) {
    const auto [parent_begin, parent_end] = parents.back();
    parents.pop_back();
    const bool first_half = begin == parent_begin;
    const int64_t other_begin = first_half ? end : parent_begin;
    const int64_t other_end = first_half ? parent_end : begin;
    CHORUS_RETURN_IF_ERROR(exchange(data + begin, end - begin, data + other_begin, other_end - other_begin, type,
                                    sizeof(T), rank_ ^ level));
    begin = parent_begin;
    end = parent_end;
  }
  return Status::OK();
}

template <typename T>
Status MpiAdasum::combine(T* mine, const T* theirs, int64_t begin, int64_t end, const std::vector<int64_t>& counts,
                          int level) {
  const bool left = (rank_ & level) == 0;
  // Per tensor: a.b, |left group's|^2, |right group's|^2 over this slice.
  sums_.assign(3 * counts.size(), 0.0);
  int64_t offset = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const int64_t from = std::max(begin, offset);
    const int64_t to = std::min(end, offset + counts[t]);
    offset += counts[t];
    double dot = 0.0;
    double my_norm = 0.0;
    double their_norm = 0.0;
    for (int64_t i = from; i < to; ++i) {
      const double a = static_cast<double>(mine[i - begin]);
      const double b = static_cast<double>(theirs[i - begin]);
      dot += a * b;
      my_norm += a * a;
      their_norm += b * b;
    }
    sums_[3 * t] = dot;
    sums_[3 * t + 1] = left ? my_norm : their_norm;
    sums_[3 * t + 2] = left ? their_norm : my_norm;
  }
  CHORUS_RETURN_IF_ERROR(sum_over_group(level));
  static const double kTiny = std::sqrt(DBL_MIN);
  offset = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    const int64_t from = std::max(begin, offset);
    const int64_t to = std::min(end, offset + counts[t]);
    offset += counts[t];
    if (from >= to) continue;
    const double dot = sums_[3 * t];
    const double my_norm = sums_[3 * t + (left ? 1 : 2)];
    const double their_norm = sums_[3 * t + (left ? 2 : 1)];
    const double my_coefficient = my_norm >= kTiny ? 1.0 - dot / my_norm * 0.5 : 1.0;
    const double their_coefficient = their_norm >= kTiny ? 1.0 - dot / their_norm * 0.5 : 1.0;
    for (int64_t i = from; i < to; ++i) {
      mine[i - begin] = static_cast<T>(my_coefficient * static_cast<double>(mine[i - begin]) +
                                       their_coefficient * static_cast<double>(theirs[i - begin]));
    }
  }
  return Status::OK();
}

Status MpiAdasum::sum_over_group(int level) {
  const int n = static_cast<int>(sums_.size());
  partner_sums_.resize(sums_.size());
  for (int distance = 1; distance <= level; distance <<= 1) {
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Sendrecv",
                                      MPI_Sendrecv(sums_.data(), n, MPI_DOUBLE, rank_ ^ distance, kTag,
                                                   partner_sums_.data(), n, MPI_DOUBLE, rank_ ^ distance, kTag,
                                                   comm_, MPI_STATUS_IGNORE)));
    for (int i = 0; i < n; ++i) sums_[i] += partner_sums_[i];
  }
  return Status::OK();
}

Status MpiAdasum::exchange(const void* send, int64_t send_count, void* recv, int64_t recv_count, MPI_Datatype type,
                           size_t element_size, int partner) {
  // Both partners loop over the longer of the two transfers, so their
  // pieces pair up.
  const int64_t longest = std::max(send_count, recv_count);
  for (int64_t i = 0; i < longest; i += count_limit_) {
    const int sending = static_cast<int>(std::clamp<int64_t>(send_count - i, 0, count_limit_));
    const int receiving = static_cast<int>(std::clamp<int64_t>(recv_count - i, 0, count_limit_));
    const char* from = static_cast<const char*>(send) + static_cast<size_t>(sending > 0 ? i : 0) * element_size;
    char* into = static_cast<char*>(recv) + static_cast<size_t>(receiving > 0 ? i : 0) * element_size;
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Sendrecv", MPI_Sendrecv(from, sending, type, partner, kTag, into,
                                                                   receiving, type, partner, kTag, comm_,
                                                                   MPI_STATUS_IGNORE)));
  }
  return Status::OK();
}

}  // namespace chorus
