#include "ops/gpu/gpu_hierarchical.h"

#include <utility>

#include "ops/gpu/staged_backend.h"
#include "ops/device_hierarchical_setup.h"
#include "ops/mpi/mpi_datatypes.h"

namespace chorus {

Status make_gpu_hierarchical_backend(const HierarchicalSelection& selection, const Topology& topology, MPI_Comm comm,
                                     std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> flat,
                                     const NcclOptions& options, std::unique_ptr<Backend>* out) {
  DeviceHierarchySetup setup;
  setup.selection = selection;
  setup.topology = topology;
  setup.device = device;
  setup.flat_name = "NCCL";
  // Within the host: a second NCCL communicator, over the host's ranks.
  setup.make_local = [device, options](MPI_Comm local, std::unique_ptr<Backend> transport,
                                       std::unique_ptr<Backend>* made) {
    return make_nccl_backend(local, device, std::move(transport), options, made);
  };
  // Across hosts: MPI on pinned host copies of the share, in the stream's
  // order; the transport runs only inside the staged backend's host
  // functions.
  setup.make_cross = [device](MPI_Comm cross, std::unique_ptr<Backend> transport, std::unique_ptr<Backend>* made) {
    int rank = 0;
    CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Comm_rank", MPI_Comm_rank(cross, &rank)));
    *made = std::make_unique<StagedBackend>(device, std::move(transport), rank);
    return Status::OK();
  };
  return make_device_hierarchical_backend(setup, comm, std::move(flat), out);
}

}  // namespace chorus
