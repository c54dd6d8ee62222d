// The negotiation primitives over MPI, on a communicator of their own.
#pragma once

#include <mpi.h>

#include "protocol/controller_transport.h"

namespace chorus {

class MpiControllerTransport : public ControllerTransport {
 public:
  explicit MpiControllerTransport(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce_or(std::vector<uint64_t>* bits) override;
  Status gather_to_coordinator(const std::string& mine, std::vector<std::string>* all) override;
  Status broadcast_from_coordinator(std::string* blob) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> counts_;        // coordinator's scratch, reused every cycle
  std::vector<int> displacements_;
  std::vector<char> gathered_;
};

}  // namespace chorus
