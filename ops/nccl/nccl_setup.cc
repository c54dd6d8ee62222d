// make_nccl_backend: the collective set-up of the NCCL communicator over
// the host transport (nccl_backend.h).
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/nccl/nccl_backend.h"
#include "ops/nccl/nccl_types.h"

namespace chorus {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

// Collective over `transport`: OK when `mine` is OK on every rank;
// otherwise an error on every rank naming the ranks where `step` failed
// (and, on those, their own reason). Ranks never go on with a communicator
// that some of them lack: they would wait in NCCL until the timeout.
Status agree(Backend* transport, int size, const Status& mine, const std::string& step) {
  const int32_t failed_here = mine.ok() ? 0 : 1;
  std::vector<int32_t> failed_at(static_cast<size_t>(size), 0);
  const std::vector<int64_t> one_each(static_cast<size_t>(size), 1);
  CHORUS_RETURN_IF_ERROR(transport->allgatherv(&failed_here, failed_at.data(), one_each, DataType::kInt32)->wait());
  std::vector<int> failed;
  for (int r = 0; r < size; ++r) {
    if (failed_at[static_cast<size_t>(r)] != 0) failed.push_back(r);
  }
  if (failed.empty()) return Status::OK();
  const std::string where = "setting up the NCCL backend: " + step + " failed on rank" +
                            (failed.size() > 1 ? "s " : " ") + rank_list(failed);
  if (!mine.ok()) return Status(mine.code(), where + ": " + mine.message());
  return Status::Aborted(where + " (this rank's part succeeded)");
}

}  // namespace

namespace {

// make_nccl_backend, for a device that may have failed to come up
// (`device_status`): that failure goes into the first agreement.
Status set_up(MPI_Comm group, std::shared_ptr<CudaDevice> device, const Status& device_status, int device_index,
              std::unique_ptr<Backend> transport, const NcclOptions& options, std::unique_ptr<Backend>* out) {
  if (transport == nullptr || out == nullptr) {
    return Status::InvalidArgument("make_nccl_backend: the transport and the output must be given");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return Status::PreconditionFailed("make_nccl_backend: MPI is not initialized");
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(group, &rank);
  MPI_Comm_size(group, &size);
  Backend* channel = transport.get();

  ncclUniqueId id{};
  Status ready = device_status;
  if (ready.ok() && device == nullptr) ready = Status::InvalidArgument("make_nccl_backend: no CUDA device given");
  if (ready.ok() && rank == 0) ready = nccl_status("ncclGetUniqueId", ncclGetUniqueId(&id));
  CHORUS_RETURN_IF_ERROR(agree(channel, size, ready,
                               "preparing CUDA device " + std::to_string(device_index) + " (and, on rank 0, "
                               "the NCCL unique id)"));
  CHORUS_RETURN_IF_ERROR(channel->broadcast(&id, static_cast<int64_t>(sizeof(id)), 0)->wait());

  std::shared_ptr<NcclCommunicator> comm;
  Status joined =
      NcclCommunicator::create(id, rank, size, device_index, options.timeout, options.close_timeout, &comm);
  std::unique_ptr<NcclBackend> backend;
  if (joined.ok()) {
    backend = std::make_unique<NcclBackend>(std::move(device), std::move(transport), comm, options);
    joined = backend->init_status();
  }
  const Status agreed =
      agree(channel, size, joined, "joining the NCCL communicator on CUDA device " + std::to_string(device_index));
  if (!agreed.ok()) {
    // Locally, at once: closing in order would wait for the ranks that failed.
    if (comm) comm->abort(agreed.message());
    return agreed;
  }
  *out = std::move(backend);
  return Status::OK();
}

}  // namespace

Status make_nccl_backend(std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
                         const NcclOptions& options, std::unique_ptr<Backend>* out) {
  return make_nccl_backend(MPI_COMM_WORLD, std::move(device), std::move(transport), options, out);
}

Status make_nccl_backend(MPI_Comm group, std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
                         const NcclOptions& options, std::unique_ptr<Backend>* out) {
  const int index = device == nullptr ? -1 : device->index();
  return set_up(group, std::move(device), Status::OK(), index, std::move(transport), options, out);
}

BackendMaker nccl_backend_maker(int device_index, const NcclOptions& options) {
  return [device_index, options](std::unique_ptr<Backend> transport, std::unique_ptr<Backend>* out) {
    std::unique_ptr<CudaDevice> device;
    const Status created = CudaDevice::create(device_index, &device);
    return set_up(MPI_COMM_WORLD, std::move(device), created, device_index, std::move(transport), options, out);
  };
}

}  // namespace chorus
