#include "ops/mpi_communication.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <unistd.h>

#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_context.h"
#include "ops/mpi/mpi_controller_transport.h"
#include "ops/mpi/mpi_cycle_trigger.h"
#include "ops/mpi/mpi_point_to_point.h"
#include "ops/mpi/mpi_setup_channel.h"
#include "ops/mpi/mpi_topology.h"
#include "base/launcher_rendezvous.h"
#include "base/logging.h"
#include "ops/heartbeat/heartbeat.h"
#include "ops/host_transport.h"
#include "ops/shm/shm_controller_transport.h"
#include "ops/shm/shm_cycle_trigger.h"
#include "ops/shm/shm_group.h"
#include "ops/gpu/gpu_plan.h"
#ifdef CHORUS_WITH_CUDA
#include "ops/gpu/gpu_backends.h"
#endif

namespace chorus {

Status connect_communication(std::unique_ptr<Communication>* out) {
  std::unique_ptr<MpiCommunication> comm;
  CHORUS_RETURN_IF_ERROR(MpiCommunication::connect(&comm));
  *out = std::move(comm);
  return Status::OK();
}

Status MpiCommunication::connect(std::unique_ptr<MpiCommunication>* out) {
  std::unique_ptr<MpiCommunication> comm(new MpiCommunication());
  CHORUS_RETURN_IF_ERROR(MpiContext::create(&comm->mpi_));
  comm->topology_ = comm->mpi_->topology();
  CHORUS_RETURN_IF_ERROR(discover_local_peers(comm->mpi_->control_comm(), comm->topology_, &comm->peers_));
  comm->transport_ = std::make_unique<MpiControllerTransport>(comm->mpi_->control_comm(), comm->peers_);
  *out = std::move(comm);
  return Status::OK();
}

Status MpiCommunication::start(const Config& agreed, const std::vector<BackendMaker>& custom) {
  agreed_ = agreed;
  MPI_Comm p2p_comm = MPI_COMM_NULL;
  CHORUS_RETURN_IF_ERROR(mpi_->new_comm(&p2p_comm));
  std::shared_ptr<MpiPointToPoint> p2p;
  CHORUS_RETURN_IF_ERROR(MpiPointToPoint::create(p2p_comm, peers_, MpiPointToPointOptions(), &p2p));
  p2p_ = std::move(p2p);
  create_trigger(agreed, std::move(peers_));
  CHORUS_RETURN_IF_ERROR(mpi_->new_comm(&split_parent_));
  // Priority order: device backends first (a program's own, then the GPU's);
  // then host memory: MPI, with shared-memory allreduce in front when the
  // job is on one host.
  for (const BackendMaker& make : custom) {
    MPI_Comm comm = MPI_COMM_NULL;
    CHORUS_RETURN_IF_ERROR(mpi_->new_comm(&comm));
    std::unique_ptr<Backend> backend;
    CHORUS_RETURN_IF_ERROR(make(std::make_unique<MpiBackend>(comm, &mpi_->types()), &backend));
    backends_.add(std::move(backend));
  }
  CHORUS_RETURN_IF_ERROR(add_gpu_backends(agreed));
  std::unique_ptr<Backend> host;
  CHORUS_RETURN_IF_ERROR(make_host_backend(
      agreed, topology_, mpi_->data_comm(), std::make_unique<MpiBackend>(mpi_->data_comm(), &mpi_->types()), &host));
  host_ = host.get();
  backends_.add(std::move(host));
  // On one host the negotiation's bit vector goes through shared memory,
  // whichever path the allreduces take (every rank alike): over MPI its
  // non-blocking allreduce cost ~2.7 us of a 4 KiB allreduce's ~11 us with
  // CHORUS_SHM_ALLREDUCE=off (docs/MEASUREMENTS.md, "Negotiation through
  // shared memory").
  if (topology_.nodes == 1 && topology_.size > 1) negotiate_through_shm(agreed);
  return Status::OK();
}

Status MpiCommunication::add_gpu_backends(const Config& agreed) {
#ifdef CHORUS_WITH_CUDA
  MpiSetupChannel channel(mpi_->control_comm());
  const TransportMaker new_transport = [this](std::unique_ptr<Backend>* out) {
    MPI_Comm comm = MPI_COMM_NULL;
    CHORUS_RETURN_IF_ERROR(mpi_->new_comm(&comm));
    *out = std::make_unique<MpiBackend>(comm, &mpi_->types());
    return Status::OK();
  };
  const CommMaker new_comm = [this](MPI_Comm* out) { return mpi_->new_comm(out); };
  return chorus::add_gpu_backends(agreed, topology_, channel, new_transport, new_comm, &backends_);
#else
  GpuPlan plan;
  CHORUS_RETURN_IF_ERROR(plan_without_cuda(agreed.gpu_backend, &plan));
  backends_.explain(Device::Kind::kCUDA, plan.refusal);
  return Status::OK();
#endif
}

void MpiCommunication::create_trigger(const Config& config, LocalPeers peers) {
  if (topology_.nodes == 1) {
    // Nothing waits on the trigger's shared memory but the trigger itself,
    // whose waits check rank 0's liveness on their own.
    constexpr std::chrono::milliseconds kUnusedPeerTimeout{300'000};
    std::unique_ptr<ShmGroup> group;
    MpiSetupChannel channel(mpi_->trigger_comm());
    const Status status = ShmGroup::create(channel, ShmCycleTrigger::data_bytes(topology_.size),
                                           kUnusedPeerTimeout, &group);
    if (status.ok()) {
      trigger_ = std::make_unique<ShmCycleTrigger>(std::move(group), config.cycle_time_ms, std::move(peers));
      return;
    }
    // The same outcome on every rank (ShmGroup::create).
    if (topology_.rank == 0) CHORUS_LOG(kWarning, "cycle trigger over MPI: " << status.message());
  }
  trigger_ = std::make_unique<MpiCycleTrigger>(mpi_->trigger_comm(), config.cycle_time_ms, std::move(peers));
}

void MpiCommunication::negotiate_through_shm(const Config& config) {
  // The controller's vector: three sections of one bit per cache slot, a
  // flags word and the autotuner's words (controller.h; 8 leaves room for
  // its 2 plus one per knob, 5 with today's 3 knobs); longer ones would go
  // through MPI.
  // Every rank lays the slots out alike: the ranks agreed on the capacity.
  const size_t max_words = 3 * static_cast<size_t>((config.cache_capacity + 63) / 64) + 1 + 8;
  // As long as the shared-memory allreduce's own waits: ranks enter a
  // negotiation together (the cycle trigger starts it on every rank).
  constexpr std::chrono::milliseconds kPeerTimeout{300'000};
  std::unique_ptr<ShmGroup> group;
  const size_t bytes = ShmControllerTransport::data_bytes(topology_.size, max_words);
  MpiSetupChannel channel(mpi_->control_comm());
  const Status status = ShmGroup::create(channel, bytes, kPeerTimeout, &group);
  if (!status.ok()) {  // the same outcome on every rank (ShmGroup::create)
    if (topology_.rank == 0) CHORUS_LOG(kWarning, "negotiating over MPI: " << status.message());
    return;
  }
  transport_ = std::make_unique<ShmControllerTransport>(std::move(transport_), std::move(group), max_words);
}


Status MpiCommunication::add_process_set(int32_t id, const std::vector<int>& ranks) {
  std::unique_ptr<ProcessSetComm> set;
  CHORUS_RETURN_IF_ERROR(
      ProcessSetComm::create(agreed_, topology_, split_parent_, &mpi_->types(), id, ranks, &set));
  if (set) process_sets_[id] = std::move(set);
  return Status::OK();
}

bool MpiCommunication::process_set(int32_t id, SetPlace* out) const {
  auto it = process_sets_.find(id);
  if (it == process_sets_.end()) return false;
  const ProcessSetComm& set = *it->second;
  *out = SetPlace{&set.backends(), set.rank(), set.size(), &set.ranks()};
  return true;
}

Status MpiCommunication::start_heartbeat(const HeartbeatOptions& options, OnPeerLost on_lost,
                                         std::unique_ptr<PeerWatch>* out) {
  MpiSetupChannel channel(mpi_->control_comm());
  const int rank = topology_.rank;
  std::unique_ptr<Heartbeat> heartbeat;
  CHORUS_RETURN_IF_ERROR(Heartbeat::start(channel, options, std::move(on_lost),
                                          [rank](const std::string& reason) { abort_mpi_job(rank, reason); },
                                          &heartbeat));
  *out = std::move(heartbeat);
  return Status::OK();
}

void abort_mpi_job(int rank, const std::string& reason) {
  constexpr int kExitStatus = kJobAbortExitCode;
  // Long enough for Open MPI to end the job in the normal way (about a
  // second here), so that its launcher reports the abort.
  static constexpr std::chrono::seconds kWatchdog{5};
  std::thread([rank] {
    std::this_thread::sleep_for(kWatchdog);
    std::fprintf(stderr, "[chorus rank %d] MPI_Abort did not end this process within %lld s: exiting\n", rank,
                 static_cast<long long>(kWatchdog.count()));
    std::fflush(stderr);
    _exit(kExitStatus);
  }).detach();
  std::fprintf(stderr, "[chorus rank %d] aborting the job: %s\n", rank, reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitStatus);
}

void abort_mpi_job_after(int rank, std::chrono::duration<double> grace, const std::string& reason) {
  std::thread([rank, grace, reason] {
    std::this_thread::sleep_for(grace);
    abort_mpi_job(rank, reason);
  }).detach();
}

MpiCommunication::~MpiCommunication() {
  // Release everything that uses MPI before the context may finalize it.
  if (p2p_) {
    p2p_->close([](const TransferInfo& info) {
      return Status::Shutdown("Chorus has been shut down while a " + describe(info) + " was pending");
    });
  }
  trigger_.reset();
  transport_.reset();
  host_ = nullptr;
  process_sets_.clear();
  backends_ = BackendRegistry();
}

}  // namespace chorus
