#include "ops/mpi/mpi_controller_transport.h"

#include <climits>

#include "ops/mpi/mpi_context.h"
#include "ops/mpi/mpi_request_wait.h"

namespace chorus {

MpiControllerTransport::MpiControllerTransport(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Status MpiControllerTransport::allreduce_or(std::vector<uint64_t>* bits) {
  // Non-blocking, so that waiting for a late rank sleeps instead of spinning
  // inside MPI. This is the first collective of a cycle: ranks arrive here
  // at different times.
  MPI_Request request;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, bits->data(), static_cast<int>(bits->size()), MPI_UINT64_T,
                          MPI_BOR, comm_, &request);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Iallreduce (negotiation bit vector)", rc));
  return wait_for_request(&request, "MPI_Iallreduce (negotiation bit vector)");
}

Status MpiControllerTransport::gather_to_coordinator(const std::string& mine,
                                                     std::vector<std::string>* all) {
  if (mine.size() > static_cast<size_t>(INT_MAX)) {
    return Status::Internal("negotiation message of " + std::to_string(mine.size()) + " bytes is too large");
  }
  int length = static_cast<int>(mine.size());
  const bool coordinator = rank_ == 0;
  if (coordinator) counts_.assign(size_, 0);
  int rc = MPI_Gather(&length, 1, MPI_INT, coordinator ? counts_.data() : nullptr, 1, MPI_INT, 0, comm_);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Gather (negotiation sizes)", rc));
  if (coordinator) {
    displacements_.assign(size_, 0);
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      displacements_[r] = static_cast<int>(total);
      total += counts_[r];
    }
    if (total > INT_MAX) return Status::Internal("gathered negotiation messages exceed 2 GiB");
    gathered_.resize(static_cast<size_t>(total));
  }
  rc = MPI_Gatherv(mine.data(), length, MPI_CHAR, coordinator ? gathered_.data() : nullptr,
                   coordinator ? counts_.data() : nullptr, coordinator ? displacements_.data() : nullptr,
                   MPI_CHAR, 0, comm_);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Gatherv (negotiation requests)", rc));
  all->clear();
  if (coordinator) {
    all->reserve(size_);
    for (int r = 0; r < size_; ++r) all->emplace_back(gathered_.data() + displacements_[r], counts_[r]);
  }
  return Status::OK();
}

Status MpiControllerTransport::broadcast_from_coordinator(std::string* blob) {
  unsigned long long length = blob->size();
  int rc = MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Bcast (negotiation size)", rc));
  if (length > static_cast<unsigned long long>(INT_MAX)) {
    return Status::Internal("negotiation response list of " + std::to_string(length) + " bytes is too large");
  }
  blob->resize(static_cast<size_t>(length));
  if (length == 0) return Status::OK();
  rc = MPI_Bcast(blob->data(), static_cast<int>(length), MPI_CHAR, 0, comm_);
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Bcast (negotiation responses)", rc));
  return Status::OK();
}

}  // namespace chorus
