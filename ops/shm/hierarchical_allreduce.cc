#include "ops/shm/hierarchical_allreduce.h"

#include "ops/mpi/mpi_setup_channel.h"

#include <string>
#include <vector>

namespace chorus {
namespace {

Status split(MPI_Comm comm, int color, int key, MPI_Comm* out) {
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Comm_split (hierarchical allreduce)", MPI_Comm_split(comm, color, key, out)));
  // An MPI error on these communicators must come back as a Status (and be
  // posted to the local peers), not abort the job from inside MPI.
  return mpi_status("MPI_Comm_set_errhandler", MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN));
}

// OK on every rank when `mine` is OK on every rank of `comm`; otherwise the
// same kind of error everywhere, naming the ranks that failed (each of which
// returns its own error).
Status agree(MPI_Comm comm, const Status& mine, const std::string& step) {
  MpiSetupChannel channel(comm);
  std::vector<int> failed;
  CHORUS_RETURN_IF_ERROR(gather_failed_ranks(channel, mine, &failed));
  if (!mine.ok()) return mine;
  if (failed.empty()) return Status::OK();
  return Status::Aborted("Hierarchical allreduce could not be set up: " + step + " failed on rank(s) [" +
                         rank_list_text(failed) + "] (their own error says why)");
}

}  // namespace

Status HierarchicalAllreduce::create(MPI_Comm comm, int host, int local_rank,
                                     const HierarchicalAllreduceOptions& options,
                                     std::unique_ptr<HierarchicalAllreduce>* out) {
  std::unique_ptr<HierarchicalAllreduce> h(new HierarchicalAllreduce());
  h->options_ = options;
  h->local_rank_ = local_rank;
  // Local ranks keep their order on the host; hosts keep theirs on every
  // cross communicator, so every share is folded over the hosts alike.
  CHORUS_RETURN_IF_ERROR(split(comm, host, local_rank, &h->local_comm_));
  CHORUS_RETURN_IF_ERROR(split(comm, local_rank, host, &h->cross_comm_));
  MPI_Comm_size(h->local_comm_, &h->local_size_);
  MPI_Comm_size(h->cross_comm_, &h->hosts_);

  // Every host needs the same number of ranks, or local rank r's shares
  // would have different boundaries on different hosts.
  int sizes[2] = {h->local_size_, -h->local_size_};
  CHORUS_RETURN_IF_ERROR(mpi_status("MPI_Allreduce (hierarchical allreduce setup)",
                                    MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MIN, comm)));
  if (sizes[0] != -sizes[1]) {
    return Status::InvalidArgument("hierarchical allreduce needs the same number of ranks on every host, but "
                                   "hosts hold between " + std::to_string(sizes[0]) + " and " +
                                   std::to_string(-sizes[1]) + " ranks");
  }

  Status mine = h->types_.create();
  if (mine.ok()) {
    h->cross_ = std::make_unique<MpiBackend>(h->cross_comm_, &h->types_);
    MpiSetupChannel on_host(h->local_comm_);
    mine = ShmGroup::create(on_host, ShmAllreduce::data_bytes(h->local_size_, options.chunk_bytes), options.peer_timeout,
                            &h->group_);
  }
  // ShmGroup agrees within a host; the hosts must agree with each other too,
  // or some would run this algorithm while others wait in another.
  CHORUS_RETURN_IF_ERROR(agree(comm, mine, "setting up shared memory"));
  h->shm_ = std::make_unique<ShmAllreduce>(h->group_.get(), ShmAllreduceOptions{options.chunk_bytes, options.peer_timeout});
  *out = std::move(h);
  return Status::OK();
}

HierarchicalAllreduce::~HierarchicalAllreduce() {
  shm_.reset();
  group_.reset();
  cross_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // MPI released everything already
  for (MPI_Comm* comm : {&local_comm_, &cross_comm_}) {
    if (*comm != MPI_COMM_NULL) MPI_Comm_free(comm);
  }
  types_.destroy();
}

Status HierarchicalAllreduce::cross_step(void* share, int64_t count, DataType dtype, ReduceOp op) {
  const int64_t step = cross_steps_++;
  Status status = options_.before_cross_step ? options_.before_cross_step(step) : Status::OK();
  if (status.ok()) status = cross_->allreduce(share, share, count, dtype, op, 1.0)->wait();
  if (status.ok()) return status;
  return Status(status.code(), "the cross-host step of local rank " + std::to_string(local_rank_) + " (" +
                                   std::to_string(count) + " elements over " + std::to_string(hosts_) +
                                   " hosts) failed: " + status.message());
}

Status HierarchicalAllreduce::allreduce(const void* input, void* output, int64_t count, DataType dtype,
                                        ReduceOp op) {
  if (hosts_ == 1) return shm_->allreduce(input, output, count, dtype, op);
  return shm_->allreduce(input, output, count, dtype, op,
                         [&](void* share, int64_t n) { return cross_step(share, n, dtype, op); });
}

}  // namespace chorus
