#include "ops/mpi/mpi_setup_channel.h"

#include <climits>
#include <string>

#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

MpiSetupChannel::MpiSetupChannel(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // The communicators Chorus uses are duplicates or splits of the world's.
  MPI_Comm_rank(MPI_COMM_WORLD, &job_rank_);
}

Status MpiSetupChannel::broadcast(void* data, size_t bytes, int root) {
  if (bytes > INT_MAX) return Status::InvalidArgument("setup broadcast of " + std::to_string(bytes) + " bytes");
  return mpi_status("MPI_Bcast (setup)", MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_));
}

Status MpiSetupChannel::allgather(const void* mine, size_t bytes, void* all) {
  if (bytes > INT_MAX) return Status::InvalidArgument("setup allgather of " + std::to_string(bytes) + " bytes");
  const int n = static_cast<int>(bytes);
  return mpi_status("MPI_Allgather (setup)", MPI_Allgather(mine, n, MPI_BYTE, all, n, MPI_BYTE, comm_));
}

}  // namespace chorus
