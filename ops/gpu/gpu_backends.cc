#include "ops/gpu/gpu_backends.h"

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "ops/gpu/cuda_binding.h"
#include "ops/cuda/cuda_device.h"
#include "ops/gpu/staged_backend.h"
#include "ops/gpu/gpu_plan.h"
#ifdef CHORUS_WITH_NCCL
#include "ops/gpu/gpu_hierarchical.h"
#include "ops/nccl/nccl_backend.h"
#endif

namespace chorus {
namespace {

#ifdef CHORUS_WITH_NCCL
constexpr bool kNcclBuilt = true;
#else
constexpr bool kNcclBuilt = false;
#endif

// Every rank's report, in rank order; this rank's own entry keeps its
// explanation, which is not sent.
Status exchange_reports(SetupChannel& channel, const RankGpu& mine, std::vector<RankGpu>* ranks) {
  char record[kRankGpuBytes];
  encode_rank_gpu(mine, record);
  std::vector<char> all(kRankGpuBytes * static_cast<size_t>(channel.size()));
  CHORUS_RETURN_IF_ERROR(channel.allgather(record, kRankGpuBytes, all.data()));
  ranks->clear();
  for (int r = 0; r < channel.size(); ++r) {
    const char* record_of_r = all.data() + kRankGpuBytes * static_cast<size_t>(r);
    ranks->push_back(r == channel.rank() ? mine : decode_rank_gpu(record_of_r));
  }
  return Status::OK();
}

// Puts the calling thread's current CUDA device back as it was: creating a
// device (and NCCL's set-up) makes the rank's GPU current, and init() should
// leave the program's own choice alone.
class CurrentDeviceKept {
 public:
  CurrentDeviceKept() { had_one_ = cudaGetDevice(&device_) == cudaSuccess; }
  ~CurrentDeviceKept() {
    if (had_one_) (void)cudaSetDevice(device_);
  }
  CurrentDeviceKept(const CurrentDeviceKept&) = delete;
  CurrentDeviceKept& operator=(const CurrentDeviceKept&) = delete;

 private:
  int device_ = 0;
  bool had_one_ = false;
};

// The plan's backend over `device`, from a transport of its own.
Status make_gpu_backend(GpuPlan::Path path, std::shared_ptr<CudaDevice> device, std::unique_ptr<Backend> transport,
                        int rank, std::unique_ptr<Backend>* out) {
#ifdef CHORUS_WITH_NCCL
  if (path == GpuPlan::Path::kNccl) {
    return make_nccl_backend(std::move(device), std::move(transport), NcclOptions(), out);
  }
#else
  (void)path;  // the plan never picks NCCL in a build without it
#endif
  *out = std::make_unique<StagedBackend>(std::move(device), std::move(transport), rank);
  return Status::OK();
}

// NCCL on a job spanning hosts: the hierarchical backend in front of the
// flat one `backend`, as CHORUS_HIERARCHICAL_ALLREDUCE and the hosts allow.
// Collective; fails (or keeps the flat backend) on every rank alike.
Status add_hierarchy(const Config& agreed, const Topology& topology, GpuPlan::Path path,
                     std::shared_ptr<CudaDevice> device, const CommMaker& new_comm, std::unique_ptr<Backend>* backend) {
#ifdef CHORUS_WITH_NCCL
  if (path != GpuPlan::Path::kNccl || topology.nodes < 2) return Status::OK();
  HierarchicalSelection selection;
  selection.mode = agreed.hierarchical_allreduce;
  selection.threshold_bytes = agreed.shm_allreduce_threshold_bytes;
  selection.ranks = topology.size;
  MPI_Comm comm = MPI_COMM_NULL;
  CHORUS_RETURN_IF_ERROR(new_comm(&comm));
  return make_gpu_hierarchical_backend(selection, topology, comm, std::move(device), std::move(*backend),
                                       NcclOptions(), backend);
#else
  // A build without NCCL: the host-staged backend runs every collective
  // through MPI on host memory already, with no hierarchy of its own.
  (void)agreed;
  (void)topology;
  (void)path;
  (void)device;
  (void)new_comm;
  (void)backend;
  return Status::OK();
#endif
}

}  // namespace

Status add_gpu_backends(const Config& agreed, const Topology& topology, SetupChannel& channel,
                        const TransportMaker& new_transport, const CommMaker& new_comm, BackendRegistry* registry) {
  GpuBinding binding;
  RankGpu mine = probe_rank_gpu(agreed, topology, &binding);
  mine.served = mine.state == RankGpu::State::kBound && registry->supports(Device::cuda(binding.index));
  std::vector<RankGpu> ranks;
  CHORUS_RETURN_IF_ERROR(exchange_reports(channel, mine, &ranks));
  GpuPlan plan;
  CHORUS_RETURN_IF_ERROR(plan_gpu_backends(ranks, channel.rank(), agreed.gpu_backend, kNcclBuilt, &plan));
  if (channel.rank() == 0 && !plan.reason.empty()) log_message(plan.level, plan.reason);
  if (plan.path == GpuPlan::Path::kNone) {
    registry->explain(Device::Kind::kCUDA, plan.refusal);
    return Status::OK();
  }
  if (plan.path == GpuPlan::Path::kProgramsOwn) {
    registry->explain(Device::Kind::kCUDA, other_gpu_refusal(binding));
    return Status::OK();
  }

  // The device (its stream) on every rank before any rank starts a transport
  // that waits for all: NCCL's set-up would wait forever for a rank that
  // failed here.
  const CurrentDeviceKept kept;
  std::unique_ptr<CudaDevice> created_device;
  const Status created = CudaDevice::create(binding.index, &created_device);
  // Shared by the backends that queue on its stream (the hierarchical one's).
  const std::shared_ptr<CudaDevice> device = std::move(created_device);
  // Each rank's step names no device: the others' are not this rank's.
  CHORUS_RETURN_IF_ERROR(agree_on_setup(channel, created, "creating its GPU's stream", "The GPU backend"));
  std::unique_ptr<Backend> transport;
  CHORUS_RETURN_IF_ERROR(new_transport(&transport));
  std::unique_ptr<Backend> backend;
  const Status made = make_gpu_backend(plan.path, device, std::move(transport), channel.rank(), &backend);
  const std::string step = std::string("creating the ") + gpu_path_name(plan.path) + " backend";
  CHORUS_RETURN_IF_ERROR(agree_on_setup(channel, made, step, "The GPU backend"));
  CHORUS_RETURN_IF_ERROR(add_hierarchy(agreed, topology, plan.path, device, new_comm, &backend));
  CHORUS_LOG(kDebug, "GPU collectives on cuda:" << binding.index << " (" << binding.how << ") through the "
                                                 << backend->name() << " backend");
  registry->add(std::move(backend));
  registry->explain(Device::Kind::kCUDA, other_gpu_refusal(binding));
  return Status::OK();
}

}  // namespace chorus
