// MpiContext: MPI's lifetime and the communicators Chorus uses. It
// initialises MPI unless the application already did (and then leaves it
// initialised at the end), and duplicates the world communicator once per
// purpose so that negotiation, the cycle trigger and data collectives never
// match each other's messages.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "chorus/status.h"
#include "ops/mpi/mpi_datatypes.h"
#include "base/topology.h"

namespace chorus {

class MpiContext {
 public:
  static Status create(std::unique_ptr<MpiContext>* out);
  ~MpiContext();

  const Topology& topology() const { return topology_; }
  MPI_Comm control_comm() const { return control_; }
  MPI_Comm trigger_comm() const { return trigger_; }
  MPI_Comm data_comm() const { return data_; }
  const MpiTypes& types() const { return types_; }
  // Another duplicate of the world communicator, freed with the context:
  // for a backend whose collectives must not interleave with others.
  Status new_comm(MPI_Comm* out);

 private:
  MpiContext() = default;
  bool owns_mpi_ = false;
  MPI_Comm control_ = MPI_COMM_NULL;
  MPI_Comm trigger_ = MPI_COMM_NULL;
  MPI_Comm data_ = MPI_COMM_NULL;
  std::vector<MPI_Comm> extra_;
  MpiTypes types_;
  Topology topology_;
};


}  // namespace chorus
