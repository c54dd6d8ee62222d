// The few communication primitives the negotiation protocol needs. The MPI
// backend implements them over a dedicated communicator; unit tests use an
// in-memory fake with one thread per rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

class ControllerTransport {
 public:
  virtual ~ControllerTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Bitwise OR of `bits` over all ranks, in place. Every rank passes a
  // vector of the same length.
  virtual Status allreduce_or(std::vector<uint64_t>* bits) = 0;
  // Every rank's `mine` reaches the coordinator (rank 0), which gets them in
  // `all` indexed by rank; on other ranks `all` is left empty.
  virtual Status gather_to_coordinator(const std::string& mine, std::vector<std::string>* all) = 0;
  // The coordinator's `blob` replaces `blob` on every other rank.
  virtual Status broadcast_from_coordinator(std::string* blob) = 0;
};

}  // namespace chorus
