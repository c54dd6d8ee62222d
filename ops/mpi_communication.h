// MpiCommunication: the job's transports assembled (core/contracts/
// communication.h): MPI for the topology, point-to-point and host memory's
// collectives; shared memory in front of it for the ranks of one host (the
// negotiation's transport, the cycle trigger, the allreduce); the GPU's
// backends when this build has CUDA; the heartbeat. The one place that
// decides which transport stands behind each interface the runtime uses.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "base/config.h"
#include "base/topology.h"
#include "chorus/status.h"
#include "contracts/communication.h"
#include "ops/local_peers.h"
#include "ops/process_set_comm.h"

namespace chorus {

class MpiContext;

// abort_job() without the object (for threads that may outlive it). If
// MPI_Abort has not ended this process after a few seconds (a launcher it
// cannot reach any more: a cut link), the process exits by itself, so that
// no rank lingers.
void abort_mpi_job(int rank, const std::string& reason);
// abort_mpi_job() `grace` later, on a thread of its own: time for the
// program to hear the error that ended this rank and say so, and for the
// other ranks of this host to notice the same loss themselves (an immediate
// MPI_Abort could kill them before their own error reached their program).
void abort_mpi_job_after(int rank, std::chrono::duration<double> grace, const std::string& reason);

class MpiCommunication final : public Communication {
 public:
  // Starts MPI (unless the program did), learns the topology and sets up
  // the negotiation's transport (connect_communication()).
  static Status connect(std::unique_ptr<MpiCommunication>* out);
  Status start(const Config& agreed, const std::vector<BackendMaker>& custom) override;
  ~MpiCommunication() override;

  const Topology& topology() const override { return topology_; }
  ControllerTransport* controller_transport() override { return transport_.get(); }
  CycleTrigger* trigger() override { return trigger_.get(); }
  const BackendRegistry& backends() const override { return backends_; }
  // On a communicator of its own.
  const std::shared_ptr<PointToPoint>& point_to_point() const override { return p2p_; }
  std::vector<std::string> allreduce_algorithms() const override { return host_->allreduce_algorithms(); }
  Status use_allreduce_algorithm(const std::string& algorithm) override {
    return host_->use_allreduce_algorithm(algorithm);
  }
  // MPI_Abort (abort_mpi_job).
  void abort_job(const std::string& reason) override { abort_mpi_job(topology_.rank, reason); }
  void abort_job_after(std::chrono::duration<double> grace, const std::string& reason) override {
    abort_mpi_job_after(topology_.rank, grace, reason);
  }
  // The heartbeat (ops/heartbeat/heartbeat.h) over every rank of the job;
  // it ends the job with abort_mpi_job.
  Status start_heartbeat(const HeartbeatOptions& options, OnPeerLost on_lost,
                         std::unique_ptr<PeerWatch>* out) override;

  // Each set has communicators of its own (ops/process_set_comm.h).
  Status add_process_set(int32_t id, const std::vector<int>& ranks) override;
  void remove_process_set(int32_t id) override { process_sets_.erase(id); }
  bool process_set(int32_t id, SetPlace* out) const override;

 private:
  MpiCommunication() = default;
  // On one host, a cycle trigger through shared memory, so that idle ranks
  // sleep until something concerns them; otherwise (or when the segment
  // cannot be set up) over MPI. Either watches `peers` while it waits for them.
  void create_trigger(const Config& config, LocalPeers peers);
  // Collective: the GPU's backend, when this build has CUDA and the ranks
  // have GPUs (ops/gpu/gpu_backends.h); else why CUDA tensors are refused.
  Status add_gpu_backends(const Config& agreed);
  // Wraps the MPI negotiation transport in the shared-memory one.
  void negotiate_through_shm(const Config& config);
  LocalPeers peers_;
  // Declared first so it is destroyed last: it may finalize MPI.
  std::unique_ptr<MpiContext> mpi_;
  Topology topology_;
  std::shared_ptr<PointToPoint> p2p_;
  std::unique_ptr<ControllerTransport> transport_;
  std::unique_ptr<CycleTrigger> trigger_;
  BackendRegistry backends_;
  Backend* host_ = nullptr;  // host memory's, inside backends_
  Config agreed_;
  // The parent of the process sets' communicators (MPI_Comm_split), used
  // for nothing else.
  MPI_Comm split_parent_ = MPI_COMM_NULL;
  // This rank's sets (those it is a member of); released before MPI.
  std::map<int32_t, std::unique_ptr<ProcessSetComm>> process_sets_;
};

}  // namespace chorus
