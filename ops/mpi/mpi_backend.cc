#include "ops/mpi/mpi_backend.h"

#include <algorithm>
#include <string>

#include "ops/kernels/scale.h"

namespace chorus {
namespace {

const char* byte_offset(const void* base, int64_t elements, size_t element_size) {
  return static_cast<const char*>(base) + static_cast<size_t>(elements) * element_size;
}
char* byte_offset(void* base, int64_t elements, size_t element_size) {
  return static_cast<char*>(base) + static_cast<size_t>(elements) * element_size;
}

Status null_buffer(const char* collective, const char* which, int64_t count) {
  return Status::InvalidArgument(std::string(collective) + ": " + which + " is null but holds " +
                                 std::to_string(count) + " elements");
}

Status wrong_length(const char* collective, const char* what, size_t got, int expected) {
  return Status::InvalidArgument(std::string(collective) + ": expected " + std::to_string(expected) + " " +
                                 what + " (one per rank), got " + std::to_string(got));
}

}  // namespace

MpiBackend::MpiBackend(MPI_Comm comm, const MpiTypes* types, int64_t count_limit)
    : comm_(comm), types_(types), count_limit_(count_limit) {
  if (count_limit < 1 || count_limit > INT_MAX) {
    init_status_ = Status::InvalidArgument("MpiBackend: count limit must be in [1, " + std::to_string(INT_MAX) +
                                           "], got " + std::to_string(count_limit));
    return;
  }
  // Without this an MPI error aborts the job instead of becoming a Status.
  init_status_ = mpi_status("MPI_Comm_set_errhandler", MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  if (init_status_.ok()) init_status_ = mpi_status("MPI_Comm_rank", MPI_Comm_rank(comm_, &rank_));
  if (init_status_.ok()) init_status_ = mpi_status("MPI_Comm_size", MPI_Comm_size(comm_, &size_));
  if (init_status_.ok()) ordered_.emplace(comm_, types_, rank_, size_);
  if (init_status_.ok()) adasum_.emplace(comm_, rank_, size_, count_limit_);
}

Status MpiBackend::run_adasum(void* buffer, const std::vector<int64_t>& counts, DataType dtype, double factor) {
  CHORUS_RETURN_IF_ERROR(check_dtype("adasum", dtype));
  return adasum_->reduce(buffer, counts, dtype, factor);
}

Status MpiBackend::check_dtype(const char* collective, DataType dtype) const {
  CHORUS_RETURN_IF_ERROR(init_status_);
  if (static_cast<int>(dtype) >= kNumDataTypes) {
    return Status::InvalidArgument(std::string(collective) + ": invalid dtype " +
                                   std::to_string(static_cast<int>(dtype)));
  }
  if (types_ == nullptr || types_->datatype(dtype) == MPI_DATATYPE_NULL) {
    return Status::PreconditionFailed(std::string(collective) + ": no MPI datatype for " + dtype_name(dtype) +
                                      " (MpiTypes::create() has not run)");
  }
  return Status::OK();
}

Status MpiBackend::check_reduction(const char* collective, DataType dtype, ReduceOp op) const {
  CHORUS_RETURN_IF_ERROR(check_dtype(collective, dtype));
  if (op == ReduceOp::kAverage) {
    return Status::InvalidArgument(std::string(collective) +
                                   ": reduce op 'average' is not supported by the MPI backend; "
                                   "reduce with 'sum' and scale the result");
  }
  if (dtype == DataType::kBool) {
    return Status::InvalidArgument(std::string(collective) + ": dtype 'bool' cannot be reduced");
  }
  if (types_->op(dtype, op) == MPI_OP_NULL && !types_->created()) {
    return Status::PreconditionFailed(std::string(collective) + ": no MPI op for reduce op '" +
                                      reduce_op_name(op) + "' on dtype '" + dtype_name(dtype) +
                                      "' (MpiTypes::create() has not run)");
  }
  if (types_->op(dtype, op) == MPI_OP_NULL) {
    return Status::InvalidArgument(std::string(collective) + ": no MPI op for reduce op '" +
                                   reduce_op_name(op) + "' on dtype '" + dtype_name(dtype) + "'");
  }
  return Status::OK();
}

Status MpiBackend::check_factor(const char* collective, DataType dtype, double factor) const {
  if (factor == 1.0 || is_floating_point(dtype)) return Status::OK();
  return Status::InvalidArgument(std::string(collective) + ": a " + dtype_name(dtype) +
                                 " result can only be scaled by 1, got " + std::to_string(factor));
}

Status MpiBackend::to_mpi_counts(const char* collective, const char* what, const std::vector<int64_t>& counts,
                                 std::vector<int>* ints, std::vector<int>* displs) const {
  if (counts.size() != static_cast<size_t>(size_)) return wrong_length(collective, what, counts.size(), size_);
  ints->resize(counts.size());
  displs->resize(counts.size());
  int64_t offset = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] < 0) {
      return Status::InvalidArgument(std::string(collective) + ": " + what + "[" + std::to_string(r) +
                                     "] is negative: " + std::to_string(counts[r]));
    }
    if (counts[r] > count_limit_ || offset > count_limit_) {
      const bool is_count = counts[r] > count_limit_;
      return Status::InvalidArgument(
          std::string(collective) + ": " + (is_count ? "" : "displacement of ") + what + "[" +
          std::to_string(r) + "] is " + std::to_string(is_count ? counts[r] : offset) +
          ", above the MPI limit of " + std::to_string(count_limit_) + " elements per call");
    }
    (*ints)[r] = static_cast<int>(counts[r]);
    (*displs)[r] = static_cast<int>(offset);
    offset += counts[r];
  }
  return Status::OK();
}

Status MpiBackend::run_allreduce(const void* input, void* output, int64_t count, DataType dtype, ReduceOp op,
                                 double factor) {
  CHORUS_RETURN_IF_ERROR(check_reduction("allreduce", dtype, op));
  CHORUS_RETURN_IF_ERROR(check_factor("allreduce", dtype, factor));
  if (count < 0) return Status::InvalidArgument("allreduce: negative count " + std::to_string(count));
  if (count > 0 && input == nullptr) return null_buffer("allreduce", "input", count);
  if (count > 0 && output == nullptr) return null_buffer("allreduce", "output", count);
  const MPI_Datatype type = types_->datatype(dtype);
  const MPI_Op mpi_op = types_->op(dtype, op);
  const size_t element_size = dtype_size(dtype);
  const bool in_place = input == output;
  // The ordered path multiplies by the factor as it folds (float16 and
  // bfloat16 round once); after MPI's own allreduce a scale pass follows,
  // which for float32/float64 gives the same bits as the fold would.
  const bool ordered = needs_ordered_reduction(dtype, op, size_, factor) ||
                       prefer_ordered_reduction(count * static_cast<int64_t>(element_size), size_);
  // Element i only ever combines with element i, so chunks are independent
  // allreduces and give the same result as one call.
  for (int64_t offset = 0; offset < count; offset += count_limit_) {
    const int n = static_cast<int>(std::min(count - offset, count_limit_));
    char* out = byte_offset(output, offset, element_size);
    if (ordered) {
      CHORUS_RETURN_IF_ERROR(
          ordered_->allreduce(byte_offset(input, offset, element_size), out, n, dtype, op, factor));
      continue;
    }
    const void* send = in_place ? MPI_IN_PLACE : byte_offset(input, offset, element_size);
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allreduce", MPI_Allreduce(send, out, n, type, mpi_op, comm_)));
    if (factor != 1.0) CHORUS_RETURN_IF_ERROR(scale(out, out, n, dtype, factor));
  }
  return Status::OK();
}

bool MpiBackend::fuses_in_place(int64_t count, DataType dtype, ReduceOp op) const {
  (void)count;
  (void)dtype;
  (void)op;
  return size_ == 1;
}

WorkPtr MpiBackend::allreduce_pieces(const std::vector<AllreducePiece>& pieces, DataType dtype, ReduceOp op,
                                     double factor) {
  if (size_ != 1) return Backend::allreduce_pieces(pieces, dtype, op, factor);
  // On one rank each piece is its own allreduce: no staging, same checks.
  for (const AllreducePiece& piece : pieces) {
    const Status status = run_allreduce(piece.input, piece.output, piece.count, dtype, op, factor);
    if (!status.ok()) return finished_work(status);
  }
  return finished_work(Status::OK());
}

Status MpiBackend::run_allgatherv(const void* input, void* output, const std::vector<int64_t>& counts,
                                  DataType dtype) {
  CHORUS_RETURN_IF_ERROR(check_dtype("allgatherv", dtype));
  std::vector<int> ints;
  std::vector<int> displs;
  CHORUS_RETURN_IF_ERROR(to_mpi_counts("allgatherv", "counts", counts, &ints, &displs));
  const int64_t mine = counts[static_cast<size_t>(rank_)];
  if (mine > 0 && input == nullptr) return null_buffer("allgatherv", "input", mine);
  const int64_t total = static_cast<int64_t>(displs.back()) + counts.back();
  if (total > 0 && output == nullptr) return null_buffer("allgatherv", "output", total);
  const MPI_Datatype type = types_->datatype(dtype);
  // An input that already sits at this rank's place in the output is what
  // MPI calls in place (passing it as both buffers would be erroneous).
  const size_t element_size = dtype_size(dtype);
  const bool in_place =
      output != nullptr && input == byte_offset(output, displs[static_cast<size_t>(rank_)], element_size);
  const void* send = in_place ? MPI_IN_PLACE : input;
  return mpi_status("MPI_Allgatherv", MPI_Allgatherv(send, static_cast<int>(mine), type, output, ints.data(),
                                                     displs.data(), type, comm_));
}

Status MpiBackend::run_broadcast(void* buffer, int64_t bytes, int root) {
  CHORUS_RETURN_IF_ERROR(init_status_);
  if (root < 0 || root >= size_) {
    return Status::InvalidArgument("broadcast: root rank " + std::to_string(root) + " is not in [0, " +
                                   std::to_string(size_) + ")");
  }
  if (bytes < 0) return Status::InvalidArgument("broadcast: negative size " + std::to_string(bytes));
  if (bytes > 0 && buffer == nullptr) return null_buffer("broadcast", "buffer", bytes);
  for (int64_t offset = 0; offset < bytes; offset += count_limit_) {
    const int n = static_cast<int>(std::min(bytes - offset, count_limit_));
    CHORUS_RETURN_IF_ERROR(
        mpi_status("MPI_Bcast", MPI_Bcast(byte_offset(buffer, offset, 1), n, MPI_BYTE, root, comm_)));
  }
  return Status::OK();
}

Status MpiBackend::exchange_counts(const std::vector<int64_t>& send_counts, std::vector<int64_t>* recv_counts) {
  CHORUS_RETURN_IF_ERROR(init_status_);
  if (send_counts.size() != static_cast<size_t>(size_)) {
    return wrong_length("exchange_counts", "send_counts", send_counts.size(), size_);
  }
  if (recv_counts == nullptr) return Status::InvalidArgument("exchange_counts: recv_counts is null");
  recv_counts->assign(send_counts.size(), 0);
  return mpi_status("MPI_Alltoall", MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv_counts->data(), 1,
                                                 MPI_INT64_T, comm_));
}

Status MpiBackend::run_alltoallv(const void* input, const std::vector<int64_t>& send_counts, void* output,
                                 const std::vector<int64_t>& recv_counts, DataType dtype) {
  CHORUS_RETURN_IF_ERROR(check_dtype("alltoallv", dtype));
  std::vector<int> send_ints;
  std::vector<int> send_displs;
  std::vector<int> recv_ints;
  std::vector<int> recv_displs;
  CHORUS_RETURN_IF_ERROR(to_mpi_counts("alltoallv", "send_counts", send_counts, &send_ints, &send_displs));
  CHORUS_RETURN_IF_ERROR(to_mpi_counts("alltoallv", "recv_counts", recv_counts, &recv_ints, &recv_displs));
  const int64_t send_total = static_cast<int64_t>(send_displs.back()) + send_counts.back();
  const int64_t recv_total = static_cast<int64_t>(recv_displs.back()) + recv_counts.back();
  if (send_total > 0 && input == nullptr) return null_buffer("alltoallv", "input", send_total);
  if (recv_total > 0 && output == nullptr) return null_buffer("alltoallv", "output", recv_total);
  // MPI's in-place alltoallv has a different layout contract; the executor
  // always gives separate buffers, so sharing one is a caller bug.
  if (input == output && send_total > 0 && recv_total > 0) {
    return Status::InvalidArgument("alltoallv: input and output must be different buffers");
  }
  const MPI_Datatype type = types_->datatype(dtype);
  return mpi_status("MPI_Alltoallv", MPI_Alltoallv(input, send_ints.data(), send_displs.data(), type, output,
                                                   recv_ints.data(), recv_displs.data(), type, comm_));
}

Status MpiBackend::run_reducescatter(const void* input, void* output, const std::vector<int64_t>& recv_counts,
                                     DataType dtype, ReduceOp op, double factor) {
  CHORUS_RETURN_IF_ERROR(check_reduction("reducescatter", dtype, op));
  CHORUS_RETURN_IF_ERROR(check_factor("reducescatter", dtype, factor));
  std::vector<int> ints;
  std::vector<int> displs;
  CHORUS_RETURN_IF_ERROR(to_mpi_counts("reducescatter", "recv_counts", recv_counts, &ints, &displs));
  // Open MPI's reduce_scatter algorithms hold the total count in an int.
  const int64_t total = static_cast<int64_t>(displs.back()) + recv_counts.back();
  if (total > count_limit_) {
    return Status::InvalidArgument("reducescatter: total count " + std::to_string(total) +
                                   " is above the MPI limit of " + std::to_string(count_limit_) +
                                   " elements per call");
  }
  if (total > 0 && input == nullptr) return null_buffer("reducescatter", "input", total);
  const int64_t mine = recv_counts[static_cast<size_t>(rank_)];
  if (mine > 0 && output == nullptr) return null_buffer("reducescatter", "output", mine);
  // MPI_IN_PLACE reads the whole input from the output buffer and leaves
  // this rank's block at its start: exactly the contract of backend.h.
  if (needs_ordered_reduction(dtype, op, size_, factor) ||
      prefer_ordered_reduction(total * static_cast<int64_t>(dtype_size(dtype)), size_)) {
    return ordered_->reduce_scatter(input, output, ints, displs, dtype, op, factor);
  }
  const void* send = input == output ? MPI_IN_PLACE : input;
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Reduce_scatter",
                                    MPI_Reduce_scatter(send, output, ints.data(), types_->datatype(dtype),
                                                       types_->op(dtype, op), comm_)));
  if (factor == 1.0) return Status::OK();
  return scale(output, output, mine, dtype, factor);
}

Status MpiBackend::run_barrier() {
  CHORUS_RETURN_IF_ERROR(init_status_);
  return mpi_status("MPI_Barrier", MPI_Barrier(comm_));
}

}  // namespace chorus
