#include "ops/mpi/mpi_controller_transport.h"

#include <climits>

#include "ops/mpi/mpi_context.h"
#include "ops/mpi/mpi_request_wait.h"

namespace chorus {

MpiControllerTransport::MpiControllerTransport(MPI_Comm comm, LocalPeers peers)
    : comm_(comm), peers_(std::move(peers)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

Status MpiControllerTransport::wait(MPI_Request* request, const char* what) {
  peers_.watch(false, LocalPeers::Clock::now(), nullptr);  // a new wait: the first check one interval on
  const WaitWatch watch = [this, what](LocalPeers::Clock::time_point now) {
    return peers_.watch(true, now, [what](const LocalPeer&) { return std::string("in ") + what; });
  };
  return wait_for_request(request, what, WaitPolicy(), watch);
}

Status MpiControllerTransport::allreduce_or(std::vector<uint64_t>* bits) {
  // Also the first collective of a cycle: ranks arrive here at different
  // times, and the wait sleeps instead of spinning inside MPI.
  bits_ = *bits;
  MPI_Request request;
  const char* what = "MPI_Iallreduce (negotiation bit vector)";
  CHORUS_RETURN_IF_ERROR(mpi_status(what, MPI_Iallreduce(MPI_IN_PLACE, bits_.data(), static_cast<int>(bits_.size()),
                                                         MPI_UINT64_T, MPI_BOR, comm_, &request)));
  CHORUS_RETURN_IF_ERROR(wait(&request, what));
  *bits = bits_;
  return Status::OK();
}

Status MpiControllerTransport::gather_to_coordinator(const std::string& mine, std::vector<std::string>* all) {
  if (mine.size() > static_cast<size_t>(INT_MAX)) {
    return Status::Internal("negotiation message of " + std::to_string(mine.size()) + " bytes is too large");
  }
  mine_ = mine;
  length_ = static_cast<int>(mine_.size());
  const bool coordinator = rank_ == 0;
  if (coordinator) counts_.assign(size_, 0);
  MPI_Request request;
  const char* sizes = "MPI_Igather (negotiation sizes)";
  CHORUS_RETURN_IF_ERROR(mpi_status(sizes, MPI_Igather(&length_, 1, MPI_INT, coordinator ? counts_.data() : nullptr,
                                                       1, MPI_INT, 0, comm_, &request)));
  CHORUS_RETURN_IF_ERROR(wait(&request, sizes));
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
  const char* requests = "MPI_Igatherv (negotiation requests)";
  CHORUS_RETURN_IF_ERROR(mpi_status(
      requests, MPI_Igatherv(mine_.data(), length_, MPI_CHAR, coordinator ? gathered_.data() : nullptr,
                             coordinator ? counts_.data() : nullptr, coordinator ? displacements_.data() : nullptr,
                             MPI_CHAR, 0, comm_, &request)));
  CHORUS_RETURN_IF_ERROR(wait(&request, requests));
  all->clear();
  if (coordinator) {
    all->reserve(size_);
    for (int r = 0; r < size_; ++r) all->emplace_back(gathered_.data() + displacements_[r], counts_[r]);
  }
  return Status::OK();
}

Status MpiControllerTransport::broadcast_from_coordinator(std::string* blob) {
  if (rank_ == 0) blob_ = *blob;
  blob_length_ = blob_.size();
  MPI_Request request;
  const char* size = "MPI_Ibcast (negotiation size)";
  CHORUS_RETURN_IF_ERROR(
      mpi_status(size, MPI_Ibcast(&blob_length_, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_, &request)));
  CHORUS_RETURN_IF_ERROR(wait(&request, size));
  if (blob_length_ > static_cast<unsigned long long>(INT_MAX)) {
    return Status::Internal("negotiation response list of " + std::to_string(blob_length_) + " bytes is too large");
  }
  blob_.resize(static_cast<size_t>(blob_length_));
  if (blob_length_ > 0) {
    const char* responses = "MPI_Ibcast (negotiation responses)";
    CHORUS_RETURN_IF_ERROR(mpi_status(responses, MPI_Ibcast(blob_.data(), static_cast<int>(blob_length_), MPI_CHAR,
                                                            0, comm_, &request)));
    CHORUS_RETURN_IF_ERROR(wait(&request, responses));
  }
  if (rank_ != 0) *blob = blob_;
  return Status::OK();
}

}  // namespace chorus
