// MpiSetupChannel: a SetupChannel over an MPI communicator (its ranks are
// the group's), for transports that set themselves up at init().
#pragma once

#include <mpi.h>

#include "ops/setup_channel.h"

namespace chorus {

class MpiSetupChannel : public SetupChannel {
 public:
  explicit MpiSetupChannel(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int job_rank() const override { return job_rank_; }
  Status broadcast(void* data, size_t bytes, int root) override;
  Status allgather(const void* mine, size_t bytes, void* all) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int job_rank_ = 0;
};

}  // namespace chorus
