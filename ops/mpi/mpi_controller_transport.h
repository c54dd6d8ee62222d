// The negotiation primitives over MPI, on a communicator of their own.
//
// Every call is non-blocking and waited for by wait_for_request, which
// watches this host's peers: a rank that dies inside a negotiation (between
// its part of the bit vector and its part of the gather, say) is named
// within LocalPeers::kInterval instead of leaving the others inside MPI
// until the heartbeat's timeout, or forever without one.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "ops/local_peers.h"
#include "protocol/controller_transport.h"

namespace chorus {

class MpiControllerTransport : public ControllerTransport {
 public:
  // `peers`: this host's other ranks (none: nothing is watched).
  MpiControllerTransport(MPI_Comm comm, LocalPeers peers);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce_or(std::vector<uint64_t>* bits) override;
  Status gather_to_coordinator(const std::string& mine, std::vector<std::string>* all) override;
  Status broadcast_from_coordinator(std::string* blob) override;

 private:
  // Completes `request`, started by the call `what` names.
  Status wait(MPI_Request* request, const char* what);

  MPI_Comm comm_;
  LocalPeers peers_;
  int rank_ = 0;
  int size_ = 1;
  // Every buffer a request reads or writes is a member: a wait that ends on a
  // dead peer leaves its request pending until the job ends.
  std::vector<uint64_t> bits_;
  int length_ = 0;
  std::string mine_;
  std::vector<int> counts_;
  std::vector<int> displacements_;
  std::vector<char> gathered_;
  unsigned long long blob_length_ = 0;
  std::string blob_;
};

}  // namespace chorus
