#include "ops/communication.h"

#include <cstdio>

#include "ops/mpi/mpi_backend.h"
#include "ops/mpi/mpi_context.h"
#include "ops/mpi/mpi_controller_transport.h"
#include "ops/mpi/mpi_cycle_trigger.h"
#include "ops/shm/host_backend.h"
#include "ops/shm/shm_backend.h"

namespace chorus {

Status Communication::create(const Config& config, std::unique_ptr<Communication>* out) {
  std::unique_ptr<Communication> comm(new Communication());
  CHORUS_RETURN_IF_ERROR(MpiContext::create(&comm->mpi_));
  comm->topology_ = comm->mpi_->topology();
  comm->transport_ = std::make_unique<MpiControllerTransport>(comm->mpi_->control_comm());
  comm->trigger_ = std::make_unique<MpiCycleTrigger>(comm->mpi_->trigger_comm(), config.cycle_time_ms);
  // Priority order: device backends first once they exist; then host memory:
  // MPI, with shared-memory allreduce in front when the job is on one host.
  std::unique_ptr<Backend> host;
  CHORUS_RETURN_IF_ERROR(make_host_backend(
      config, comm->topology_, comm->mpi_->data_comm(),
      std::make_unique<MpiBackend>(comm->mpi_->data_comm(), &comm->mpi_->types()), &host));
  comm->shm_ = dynamic_cast<ShmBackend*>(host.get());
  comm->backends_.add(std::move(host));
  *out = std::move(comm);
  return Status::OK();
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
