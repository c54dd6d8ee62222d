#include "ops/process_set_comm.h"

#include <set>
#include <string>

#include "ops/host_transport.h"
#include "ops/mpi/mpi_backend.h"

namespace chorus {
namespace {

Status mpi_call(const char* what, int code) {
  if (code == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::Internal(std::string(what) + " failed: " + std::string(text, static_cast<size_t>(length)));
}

}  // namespace

Status ProcessSetComm::create(const Config& config, const Topology& world, MPI_Comm parent, const MpiTypes* types,
                              int32_t id, const std::vector<int>& ranks, std::unique_ptr<ProcessSetComm>* out) {
  out->reset();
  int set_rank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == world.rank) set_rank = static_cast<int>(i);
  }
  // Every rank of the job takes part in the split; the members are ordered
  // by their set rank (the key), those outside get no communicator.
  MPI_Comm comm = MPI_COMM_NULL;
  CHORUS_RETURN_IF_ERROR(
      mpi_call("MPI_Comm_split", MPI_Comm_split(parent, set_rank >= 0 ? 0 : MPI_UNDEFINED, set_rank, &comm)));
  if (set_rank < 0) return Status::OK();
  std::unique_ptr<ProcessSetComm> set(new ProcessSetComm());
  set->comm_ = comm;
  set->rank_ = set_rank;
  set->size_ = static_cast<int>(ranks.size());
  set->ranks_ = ranks;
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

  // One host? The members' nodes, gathered among them.
  std::vector<int> nodes(ranks.size(), 0);
  int node = world.node;
  CHORUS_RETURN_IF_ERROR(mpi_call("MPI_Allgather", MPI_Allgather(&node, 1, MPI_INT, nodes.data(), 1, MPI_INT, comm)));
  const size_t hosts = std::set<int>(nodes.begin(), nodes.end()).size();

  auto mpi = std::make_unique<MpiBackend>(comm, types);
  std::unique_ptr<Backend> host;
  if (hosts == 1) {
    Topology topology;
    topology.rank = set_rank;
    topology.size = set->size_;
    topology.local_rank = set_rank;
    topology.local_size = set->size_;
    CHORUS_RETURN_IF_ERROR(
        make_host_backend(config, topology, comm, std::move(mpi), &host, "set" + std::to_string(id)));
  } else {
    host = std::move(mpi);
  }
  set->host_name_ = host->name();
  set->backends_.add(std::move(host));
  const std::string refusal = "it is in process set " + std::to_string(id) +
                              ", and process sets other than the global set run on CPU tensors only "
                              "(process sets on GPUs are not supported yet)";
  set->backends_.explain(Device::Kind::kCUDA, refusal);
  set->backends_.explain(Device::Kind::kCustom, refusal);
  *out = std::move(set);
  return Status::OK();
}

ProcessSetComm::~ProcessSetComm() {
  backends_ = BackendRegistry();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

}  // namespace chorus
