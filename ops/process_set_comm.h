// ProcessSetComm: the backends of one process set (process_set.h) other than
// the global one, on the set's members: an MPI communicator of the members
// alone (MPI_Comm_split of a communicator of the whole job), and, when every
// member is on one host and shared-memory allreduce is enabled, the
// shared-memory backend over a group of just those ranks in front of it
// (make_host_backend with the set's own topology). A set that spans hosts
// runs on its MPI communicator alone (docs/DESIGN.md, "Process sets").
// Collectives on GPU memory are not supported on such sets yet: the registry
// holds host memory's backend only, and explains the refusal.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/config.h"
#include "base/topology.h"
#include "chorus/status.h"
#include "contracts/backend_registry.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

class ProcessSetComm {
 public:
  // Collective over every rank of `parent` (a communicator of the whole job
  // that nothing else uses at the same time): every rank calls it at the
  // same point (the set's add response). `ranks`: the members, ascending.
  // `*out` stays null on a rank outside the set.
  static Status create(const Config& config, const Topology& world, MPI_Comm parent, const MpiTypes* types,
                       int32_t id, const std::vector<int>& ranks, std::unique_ptr<ProcessSetComm>* out);
  ~ProcessSetComm();
  ProcessSetComm(const ProcessSetComm&) = delete;
  ProcessSetComm& operator=(const ProcessSetComm&) = delete;

  int rank() const { return rank_; }  // this rank's set rank
  int size() const { return size_; }
  const std::vector<int>& ranks() const { return ranks_; }  // the members' job ranks, ascending
  const BackendRegistry& backends() const { return backends_; }
  const char* host_backend_name() const { return host_name_; }

 private:
  ProcessSetComm() = default;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> ranks_;
  BackendRegistry backends_;
  const char* host_name_ = "mpi";
};

}  // namespace chorus
