#include "ops/communication.h"

#include <chrono>
#include <cstdio>

#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_context.h"
#include "ops/mpi/mpi_controller_transport.h"
#include "ops/mpi/mpi_cycle_trigger.h"
#include "ops/mpi/mpi_topology.h"
#include "logging.h"
#include "ops/shm/host_backend.h"
#include "ops/shm/shm_backend.h"
#include "ops/shm/shm_controller_transport.h"
#include "ops/shm/shm_cycle_trigger.h"
#include "ops/shm/shm_group.h"

namespace chorus {

Status Communication::create(const Config& config, std::unique_ptr<Communication>* out) {
  std::unique_ptr<Communication> comm(new Communication());
  CHORUS_RETURN_IF_ERROR(MpiContext::create(&comm->mpi_));
  comm->topology_ = comm->mpi_->topology();
  comm->transport_ = std::make_unique<MpiControllerTransport>(comm->mpi_->control_comm());
  LocalPeers peers;
  CHORUS_RETURN_IF_ERROR(discover_local_peers(comm->mpi_->control_comm(), comm->topology_, &peers));
  comm->create_trigger(config, std::move(peers));
  // Priority order: device backends first once they exist; then host memory:
  // MPI, with shared-memory allreduce in front when the job is on one host.
  std::unique_ptr<Backend> host;
  CHORUS_RETURN_IF_ERROR(make_host_backend(
      config, comm->topology_, comm->mpi_->data_comm(),
      std::make_unique<MpiBackend>(comm->mpi_->data_comm(), &comm->mpi_->types()), &host));
  comm->shm_ = dynamic_cast<ShmBackend*>(host.get());
  comm->backends_.add(std::move(host));
  // Where the allreduces take shared memory (every rank alike), so does the
  // negotiation's bit vector.
  if (comm->shm_ != nullptr) comm->negotiate_through_shm(config);
  *out = std::move(comm);
  return Status::OK();
}

void Communication::create_trigger(const Config& config, LocalPeers peers) {
  if (topology_.nodes == 1) {
    // Nothing waits on the trigger's shared memory but the trigger itself,
    // whose waits check rank 0's liveness on their own.
    constexpr std::chrono::milliseconds kUnusedPeerTimeout{300'000};
    std::unique_ptr<ShmGroup> group;
    const Status status = ShmGroup::create(mpi_->trigger_comm(), ShmCycleTrigger::data_bytes(topology_.size),
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

void Communication::negotiate_through_shm(const Config& config) {
  // The controller's vector: three sections of one bit per cache slot, a
  // flags word and the autotuner's words (controller.h; 8 leaves room for
  // its 4); longer ones, which this does not expect, would go through MPI.
  // Every rank must lay the slots out alike, and init() compares the ranks'
  // cache capacities only through this transport (a rank whose environment
  // was invalid even runs with the default): so size it for the largest.
  const uint64_t slot_words = static_cast<uint64_t>((config.cache_capacity + 63) / 64);
  uint64_t largest_words = 3 * slot_words + 1 + 8;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, &largest_words, 1, MPI_UINT64_T, MPI_MAX, mpi_->control_comm());
  if (rc != MPI_SUCCESS) {
    CHORUS_LOG(kWarning, "negotiating over MPI: MPI_Allreduce of its size failed with error " << rc);
    return;
  }
  const size_t max_words = static_cast<size_t>(largest_words);
  // As long as the shared-memory allreduce's own waits: ranks enter a
  // negotiation together (the cycle trigger starts it on every rank).
  constexpr std::chrono::milliseconds kPeerTimeout{300'000};
  std::unique_ptr<ShmGroup> group;
  const size_t bytes = ShmControllerTransport::data_bytes(topology_.size, max_words);
  const Status status = ShmGroup::create(mpi_->control_comm(), bytes, kPeerTimeout, &group);
  if (!status.ok()) {  // the same outcome on every rank (ShmGroup::create)
    if (topology_.rank == 0) CHORUS_LOG(kWarning, "negotiating over MPI: " << status.message());
    return;
  }
  transport_ = std::make_unique<ShmControllerTransport>(std::move(transport_), std::move(group), max_words);
}

void Communication::set_shm_allreduce_threshold(int64_t bytes) {
  if (shm_ != nullptr) shm_->set_selection_threshold(bytes);
}

void Communication::abort_job(const std::string& reason) {
  std::fprintf(stderr, "[chorus rank %d] aborting the job: %s\n", topology_.rank, reason.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 70);
}

Communication::~Communication() {
  // Release everything that uses MPI before the context may finalize it.
  trigger_.reset();
  transport_.reset();
  shm_ = nullptr;
  backends_ = BackendRegistry();
}

}  // namespace chorus
